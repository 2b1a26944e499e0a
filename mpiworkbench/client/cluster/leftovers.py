"""What the MPI worlds of this notebook's clusters would leave in ``/dev/shm``, and removing it.

A restart kills the old world with SIGKILL (a rank blocked in MPI runs no exit handler), a
stop kills the ranks that ignore its SIGTERM, and a world can die by itself (a rank killed,
``MPI_Abort``, a segfault): then neither MPICH nor the interposer removes its files in
``/dev/shm`` (:mod:`mpiworkbench.core.shm`), about 2 MB per world and host plus 56 MB per
traced rank. So each rank's footprint (pid, host, start time, the world files it maps or
holds open) is recorded while it lives — when the rank map is read (:func:`remember_ranks`,
the ranks on this host), when the engines are armed for hang reports (every rank reports
its own), and just before a kill (:func:`before_kill`) — and its files are removed after it
has died, by a process on its host that checks no live process uses them:

* ranks on the notebook's host: by this process (:func:`after_kill`);
* ranks on other hosts, after a restart: by the new ranks on the same host, the next time
  the engines are armed (:func:`elsewhere`); a host that runs no new rank keeps them;
* ranks on other hosts, after a stop: nothing runs on that host any more that could remove
  them, so they stay there (a rank that exits politely removes its own).

Two hosts are the same when their ``socket.gethostname()`` is (and then so is the pid space).
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any, Iterable

from mpiworkbench.client.history import drop
from mpiworkbench.core import processes, shm
from mpiworkbench.trace.hang import interposer_paths

#: Seconds to wait for ranks that have not reported their files to do so before a kill
#: (ranks blocked in MPI never answer).
FOOTPRINT_TIMEOUT_S = 2.0
#: Seconds to wait for the killed ranks of this host to exit before removing their files.
EXIT_TIMEOUT_S = 10.0

_known: dict[tuple[str, int, int | None], dict[str, Any]] = {}  # (host, pid, started) → footprint
_elsewhere: list[dict[str, Any]] = []  # footprints of killed ranks on other hosts


def _key(record: dict[str, Any]) -> tuple[str, int, int | None]:
    return record["host"], int(record["pid"]), record.get("started")


def client_tag(client) -> str:
    """Which client a footprint was recorded through (its session id): a world is known by
    its client and engine ids, which stay valid after the engines have died."""
    return str(getattr(getattr(client, "session", None), "session", "") or id(client))


def remember(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add footprints (:func:`~mpiworkbench.core.shm.footprint`, with ``client`` and
    ``engine``: whose engine it is, when known); files of one process are merged. Returns
    the records as merged, one per process."""
    merged = {}
    for record in records:
        key = _key(record)
        old = _known.get(key, {})
        new = {**old, **{k: v for k, v in record.items() if v is not None}}
        new["files"] = sorted(set(old.get("files", ())) | set(record.get("files") or ()))
        _known[key] = merged[key] = new
    return list(merged.values())


def remember_ranks(client, infos: dict[int, dict[str, Any]]) -> None:
    """Record the footprints of the ranks of this host in the rank map *infos* (engine id →
    ``rank_info``: ``host``, ``pid``) of *client*, read from ``/proc`` here."""
    here, tag = socket.gethostname(), client_tag(client)
    remember({**shm.footprint(info["pid"]), "client": tag, "engine": engine}
             for engine, info in infos.items() if info.get("host") == here and shm.started(info["pid"]) is not None)


def remember_armed(client, infos: dict[int, dict[str, Any]]) -> None:
    """Record the footprints the engines reported when armed (engine id →
    :func:`mpiworkbench.trace.hang.arm`'s answer)."""
    tag = client_tag(client)
    remember({**info, "client": tag, "engine": engine} for engine, info in infos.items() if "files" in info)


def local_tree(cluster) -> list[dict[str, Any]]:
    """Footprints of the processes below the engine launchers' local processes (``mpiexec``)
    that hold world files: the ranks of this host, found without asking them anything."""
    found = []
    for launcher in (getattr(cluster, "engines", None) or {}).values():
        process = getattr(launcher, "process", None)
        pid = getattr(process, "pid", None)
        if pid is None or not processes.alive(pid):
            continue
        found += [record for record in map(shm.footprint, processes.descendants(pid))
                  if record["files"] and record["started"] is not None]
    return found


def _ask(client, engine_ids: list[int], timeout: float) -> list[dict[str, Any]]:
    """Footprints the engines *engine_ids* of *client* report themselves within *timeout* s."""
    pending = {}
    for engine in engine_ids:
        try:
            pending[engine] = client[engine].apply_async(shm.footprint)
        except Exception:  # noqa: BLE001 - engine gone already: nothing to ask
            continue
    deadline, answers = time.monotonic() + timeout, []
    for engine, ar in pending.items():
        if ar.wait(max(0.0, deadline - time.monotonic())) and ar.successful():
            answers.append({**ar.get(), "client": client_tag(client), "engine": engine})
            drop(ar, (client.history,))
    return answers


def before_kill(cluster, client=None, engine_ids: Iterable[int] | None = None) -> list[dict[str, Any]]:
    """Footprints of the world about to be killed or stopped: the ranks below *cluster*'s local
    launchers, and what was recorded of *client*'s engines *engine_ids* (all of its engines
    when ``None``), their files read again when on this host. Engines with no record are
    asked, for at most :data:`FOOTPRINT_TIMEOUT_S` (ranks blocked in MPI never answer),
    unless the local launchers show as many ranks."""
    tag = client_tag(client) if client is not None else None
    tree = [{**record, "client": tag} for record in local_tree(cluster)]
    ids = None if engine_ids is None else set(engine_ids)
    # what was recorded of these engines, and of the ranks below the local launchers (found
    # by an earlier call of this kill: a restart first kills blocked ranks, then the world)
    world = [record for record in _known.values() if tag is not None and record.get("client") == tag
             and (ids is None or record.get("engine") in ids or record.get("engine") is None)]
    missing = sorted((ids or set()) - {record.get("engine") for record in world})
    asked = _ask(client, missing, FOOTPRINT_TIMEOUT_S) if missing and len(tree) < len(ids or ()) else []
    here = socket.gethostname()
    local = [record for record in world if record["host"] == here]
    again = [shm.footprint(record["pid"]) for record in local]  # files made since they were recorded
    world += [new for new, was in zip(again, local) if new["started"] == was.get("started")]
    return remember([*world, *tree, *asked])


def after_kill(records: list[dict[str, Any]], restarting: bool = True) -> list[str]:
    """Once the world of *records* (:func:`before_kill`) has been killed or stopped: wait for
    its ranks on this host to exit and remove the files they left in ``/dev/shm``; with
    *restarting*, keep the other hosts' records for the next ranks there (a stop leaves them:
    see the module's docstring). Returns the paths removed."""
    here = socket.gethostname()
    shm.wait_gone(records, EXIT_TIMEOUT_S)
    removed = shm.remove_left_behind(records, also=interposer_paths) + shm.remove_unheld_segments()
    for record in records:
        if record["host"] != here:
            _known.pop(_key(record), None)
            if restarting:
                _elsewhere.append(record)
        elif shm.gone(record) and not any(map(os.path.lexists, [*record["files"], *interposer_paths(record["pid"])])):
            _known.pop(_key(record), None)  # nothing more to remove
    return removed


def elsewhere() -> list[dict[str, Any]]:
    """Footprints of killed ranks on other hosts, for the new ranks there to remove
    (:func:`mpiworkbench.trace.hang.arm`)."""
    return list(_elsewhere)


def handed_over(records: list[dict[str, Any]], hosts: Iterable[str]) -> None:
    """The new ranks on *hosts* have removed what *records* (:func:`elsewhere`) left there."""
    hosts = set(hosts)
    done = {_key(record) for record in records if record["host"] in hosts}
    _elsewhere[:] = [record for record in _elsewhere if _key(record) not in done]
