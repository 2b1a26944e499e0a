"""The MPI worlds of this host as the lab's world sidebar shows them, read from files alone, in the
kernel side's environment (:mod:`mpiworkbench.sidebar.reader` answers the lab part with it).

A notebook's kernel is busy while its cell runs, so nothing here asks it: every fact comes from a
file some process of the world keeps up to date.

* the world's directory (:func:`mpiworkbench.client.cluster.record.world_directory`, under a
  profile of IPython's directory: a profile's ``ipcluster`` and a workbench's own cluster,
  ``profile_default``, alike): its engine set (``world.json``), each rank's process (written by
  :func:`mpiworkbench.client.calls.trace.arm_engines`), the turn's holder (who runs what) and the
  live clients (which notebooks use it);
* each rank's stop record (:mod:`mpiworkbench.trace.stops`) and in-flight MPI slot
  (:func:`mpiworkbench.trace.hang.read_slot`), for a rank on this host;
* the ranks' connection files that the lab lists as running kernels (the caller passes the
  kernel manager's map of file → kernel id).

Pure reading: :func:`read_worlds` returns plain JSON-ready dicts, tested on fake directories.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import Any

from mpiworkbench.client.calls.clients import held_by_someone, read_holder
from mpiworkbench.client.calls.debugging import KERNEL_FILE_PATTERN
from mpiworkbench.client.calls.trace import RANK_PROCESSES
from mpiworkbench.client.cluster.record import read_json, recorded_engine_set
from mpiworkbench.core.processes import Identity, alive
from mpiworkbench.lab.protocol import world_directories
from mpiworkbench.trace import hang, stops

#: A rank's states, most telling first: a group of ranks takes the first of its ranks' states.
STATES = ("dead", "stopped", "waiting", "busy", "idle", "unknown")


def rank_kernels(kernel_files: dict[str, str | os.PathLike]) -> dict[tuple[str, int, int], str]:
    """``(cluster_id, generation, rank)`` → kernel id, from the lab's map of kernel id →
    connection file (jupyter_client's ``MultiKernelManager.kernel_id_to_connection_file``: the ids
    of the external kernels are made up by the lab, one per file it finds)."""
    found = {}
    for kernel_id, path in kernel_files.items():
        match = KERNEL_FILE_PATTERN.match(Path(path).name)
        if match:
            found[(match["cluster"], int(match["generation"]), int(match["rank"]))] = kernel_id
    return found


def live_clients(directory: Path, lab_kernels: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The world's live clients, in the order they came: ``notebook`` (or script), ``kernel``
    (the Jupyter kernel id of its kernel, ``""`` outside one), ``pid``, ``host`` and ``lab``
    (whether that kernel is one of *lab_kernels*, the lab's running kernels)."""
    clients = []
    for path in (directory / "clients").glob("*.json"):
        data = read_json(path)
        if data and held_by_someone(path):
            kernel = str(data.get("kernel") or "")
            clients.append({"notebook": str(data.get("notebook") or "?"), "kernel": kernel, "pid": data.get("pid"),
                            "host": data.get("host"), "since": data.get("since") or 0.0,
                            "lab": bool(kernel) and kernel in lab_kernels})
    return sorted(clients, key=lambda client: client["since"])


def armed_before(path: Path, at: float | None) -> bool:
    """Whether the ranks' process record *path* was written before the engine set of the world
    was (its ``at``: when it was started or last restarted)."""
    try:
        return at is not None and path.stat().st_mtime < float(at)
    except (OSError, TypeError, ValueError):
        return False


def rank_state(rank: int, process: dict[str, Any] | None, busy: str | None, here: str) -> dict[str, str]:
    """``{state, where}`` of one rank from its process record (``None``: not known yet), and the
    label of the call its world runs (*busy*; ``None`` when the turn is free)."""
    process = process or {}
    if process.get("host") != here or "pid" not in process:
        # a rank on another host, or not armed yet: only what the turn says
        if busy is None:
            return {"state": "idle" if process else "unknown", "where": "" if process else "not known yet"}
        return {"state": "busy", "where": busy}
    pid = int(process["pid"])
    started = process.get("started")
    if not (Identity(pid, int(started)).alive() if started is not None else alive(pid)):
        return {"state": "dead", "where": f"process {pid} gone"}
    stop = stops.read(pid)
    if stops.is_stopped(stop):
        return {"state": "stopped", "where": stops.where_text(stop)}
    inflight = hang.read_slot(pid)
    if inflight is not None and inflight.call is not None:
        return {"state": "waiting", "where": inflight.describe()}
    if busy is not None:
        return {"state": "busy", "where": busy}
    return {"state": "idle", "where": ""}


def group_ranks(ranks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ranks at the same place in one row (as DDT's and TotalView's rank grids do): ``[{state,
    where, ranks}]``, the most telling state first, then by the lowest rank."""
    groups: dict[tuple[str, str], list[int]] = {}
    for rank in ranks:
        # "for 12.3 s" differs between ranks waiting in the same call: grouped without it
        place = re.sub(r" for [\d.]+ s$", "", rank["where"])
        groups.setdefault((rank["state"], place), []).append(rank["rank"])
    rows = [{"state": state, "where": where, "ranks": sorted(members)} for (state, where), members in groups.items()]
    return sorted(rows, key=lambda row: (STATES.index(row["state"]) if row["state"] in STATES else len(STATES),
                                         row["ranks"][0]))


def read_world(profile_dir: Path, cluster_id: str, directory: Path,
               kernels: dict[tuple[str, int, int], str] | None = None, here: str | None = None,
               lab_kernels: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    """One world as the sidebar shows it (see :func:`read_worlds`)."""
    here = socket.gethostname() if here is None else here
    kernels = kernels or {}
    engine_set = recorded_engine_set(directory) or {}
    engines = {int(rank): int(engine) for engine, rank in (engine_set.get("ranks") or {}).items()}
    processes = {int(rank): info for rank, info in (read_json(directory / RANK_PROCESSES) or {}).items()}
    if processes and armed_before(directory / RANK_PROCESSES, engine_set.get("at")):
        processes = {}  # the processes of the engine set before a restart: the new ones are armed by its next call
    holder = read_holder(directory)
    busy = None
    if holder is not None:
        who = holder.get("notebook") or "a client"
        busy = f"{holder.get('label') or 'a call'} (from {who})"
    ranks = []
    for rank in sorted(set(engines) | set(processes)):
        process = processes.get(rank) or {}
        ranks.append({"rank": rank, "engine": engines.get(rank), "host": process.get("host"), "pid": process.get("pid"),
                      **rank_state(rank, processes.get(rank), busy, here),
                      "kernel": kernels.get((cluster_id, int(engine_set.get("generation") or 0), rank))})
    states = {r["state"] for r in ranks}
    if ranks and states == {"dead"}:
        state = "dead"
    elif holder and holder.get("blocked"):
        state = "blocked"
    elif "stopped" in states:
        state = "debugging"
    elif holder is not None or states & {"busy", "waiting"}:
        state = "busy"
    elif not ranks:
        state = "starting"
    else:
        state = "idle"
    clients = live_clients(directory, lab_kernels)
    holder_kernel = str(holder.get("kernel") or "") if holder else ""
    return {"cluster_id": cluster_id, "profile": profile_dir.name[len("profile_"):], "profile_dir": str(profile_dir),
            "state": state, "generation": engine_set.get("generation"),
            "notebooks": [client["notebook"] for client in clients], "clients": clients,
            "busy": busy, "holder_kernel": holder_kernel, "holder_notebook": holder.get("notebook") if holder else None,
            "holder_in_lab": bool(holder_kernel) and holder_kernel in lab_kernels,
            "ranks": ranks, "groups": group_ranks(ranks)}


def read_worlds(ipython_dir: str | os.PathLike, kernel_files: dict[str, str | os.PathLike] | None = None,
                here: str | None = None, lab_kernels: set[str] | frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Every world under *ipython_dir*: ``cluster_id``, ``profile``, ``state`` (``idle``,
    ``busy``, ``debugging``, ``blocked``, ``dead``, ``starting``), the ``notebooks`` using it,
    its ``ranks`` (``rank``, ``engine``, ``host``, ``pid``, ``state``: ``idle``, ``busy``,
    ``waiting`` in an MPI call, ``stopped`` in the debugger, ``dead``, or ``unknown``; ``where``
    in words; ``kernel``: the lab's id of the rank's kernel once it was opened for debugging)
    and the ranks grouped by where they are (``groups``); for the world's actions, its live
    ``clients`` (:func:`live_clients`) and the turn's holder: ``holder_kernel`` (the Jupyter kernel
    id of the client running work on it, ``""`` when none or outside a kernel),
    ``holder_notebook`` and ``holder_in_lab``. *kernel_files*: the lab's kernel id → connection
    file of its external kernels; *lab_kernels*: the ids of the lab's running kernels."""
    kernels = rank_kernels(kernel_files or {})
    return [read_world(profile_dir, cluster_id, directory, kernels, here, lab_kernels)
            for profile_dir, cluster_id, directory in world_directories(ipython_dir)]
