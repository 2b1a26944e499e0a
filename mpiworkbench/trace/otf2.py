"""A :class:`~mpiworkbench.trace.model.Trace` as an OTF2 archive (Vampir, the Score-P tools,
``otf2-print``), written and read with the reference OTF2 library's Python bindings (the
``otf2`` package: ``pip install 'mpiworkbench[otf2]'``).

What the archive holds:

* definitions: a system tree (one node per host), one process location group and one CPU-thread
  location per rank (location *i* is rank *i*), one region per MPI call kind present (paradigm MPI,
  role point-to-point, barrier, one-to-all, …), and every communicator of ``trace.comms`` as an OTF2
  ``Comm`` whose group lists its members' locations in the communicator's own rank order;
* events, per rank in call order on a nanosecond clock from the trace's origin: ``Enter``/``Leave``
  around every call; ``MpiSend`` (blocking) or ``MpiIsend`` … ``MpiIsendComplete`` (non-blocking,
  completed where the trace says it completed) for every send with a peer; ``MpiRecv`` (at the end of a
  blocking receive) or ``MpiIrecvRequest`` … ``MpiIrecv`` (at its completion) for every receive
  whose source is known; ``MpiCollectiveBegin``/``MpiCollectiveEnd`` inside every blocking collective
  and ``NonBlockingCollectiveRequest`` … ``NonBlockingCollectiveComplete`` for the non-blocking ones,
  with their communicator, root and bytes.

Peers and roots are written, as OTF2 wants, as ranks *in the record's communicator*. A
point-to-point call on a communicator whose members are not known (or whose members do not include
the peer) is written on ``COMM_WORLD`` with the peer's world rank, which is what the trace records;
collectives on a communicator the trace does not know go to an ``unknown communicator`` with no
members. ``COMM_SELF`` is an OTF2 ``COMM_SELF`` group (each rank's own; the peer is its rank 0).
Not written as their own records (only ``Enter``/``Leave``): one-sided operations, communicator
creation, persistent and partitioned collectives.

Beside the archive, when :func:`write_otf2` is given them, ``<directory>/wait_states.json`` holds
the trace's wait states (:func:`mpiworkbench.trace.waits.wait_states`), for tools that read OTF2 without knowing them:
``{"format": "mpiworkbench wait states", "version": 1, "patterns": [...], "clock": "seconds from
the archive's origin (its timestamps / 1e9)", "summary": {... WaitStates.to_dict()},
"intervals": [{"pattern", "rank", "cause_rank", "call", "comm", "t_start", "seconds", "site",
"cause_site"}, ...]}``; ranks are the archive's locations.
"""

from __future__ import annotations

import bisect
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from mpiworkbench.trace.events import (
    COLLECTIVES, FAMILY, KINDS, NONBLOCKING_COLLECTIVES, RECEIVES, SENDS, STARTED_RECEIVES,
    STARTED_SENDS, STARTS,
)

#: Ticks per second of the archive's clock: nanoseconds.
TIMER_RESOLUTION = 1_000_000_000

_INSTALL = "the OTF2 export needs the `otf2` package (the reference OTF2 library's Python bindings); " \
           "install it with pip install 'mpiworkbench[otf2]'"

#: Blocking sends: one MpiSend inside the call. Others in SENDS (Isend, Issend) are requests.
_BLOCKING_SENDS = frozenset(KINDS.index(k) for k in ("MPI_Send", "MPI_Ssend", "MPI_Sendrecv", "MPI_Sendrecv_replace"))
_NONBLOCKING_RECEIVES = frozenset({KINDS.index("MPI_Irecv")})

#: The collective operation of each (blocking or non-blocking) collective, by the name without
#: ``MPI_`` and without the non-blocking ``I``.
_OPS = {
    "Barrier": "BARRIER", "Bcast": "BCAST", "Reduce": "REDUCE", "Allreduce": "ALLREDUCE",
    "Gather": "GATHER", "Gatherv": "GATHERV", "Scatter": "SCATTER", "Scatterv": "SCATTERV",
    "Allgather": "ALLGATHER", "Allgatherv": "ALLGATHERV", "Alltoall": "ALLTOALL", "Alltoallv": "ALLTOALLV",
}
_ONE_TO_ALL = {"Bcast", "Scatter", "Scatterv"}
_ALL_TO_ONE = {"Reduce", "Gather", "Gatherv"}
_ALL_TO_ALL = {"Allreduce", "Allgather", "Allgatherv", "Alltoall", "Alltoallv"}


def require_otf2():
    """The ``otf2`` package, imported on first use (an optional dependency).

    Raises
    ------
    ImportError
        Saying how to install it.
    """
    try:
        import otf2
    except ImportError as exc:  # pragma: no cover - the test environment has it
        raise ImportError(_INSTALL) from exc
    return otf2


def _base(kind: str) -> str:
    """``MPI_Iallreduce`` → ``Allreduce``, ``MPI_Allreduce_init`` → ``Allreduce``."""
    name = kind[4:] if kind.startswith("MPI_") else kind
    if name.endswith("_init"):
        name = name[:-5]
    if FAMILY.get(kind) == "nonblocking collective" and name.startswith("I"):
        name = name[1].upper() + name[2:]
    return name


def check_destination(directory: str | os.PathLike) -> Path:
    """Check that an OTF2 archive can be written to *directory*, before anything runs.

    Parameters
    ----------
    directory : str or os.PathLike
        The archive's directory: absent (it is created) or an empty directory; its parent must
        exist and be writable.

    Returns
    -------
    pathlib.Path
        The absolute path of *directory*.

    Raises
    ------
    ValueError
        Naming the path and what to do: it is a file, a non-empty directory, not writable, or its
        parent directory does not exist.
    """
    path = Path(directory).expanduser().absolute()
    if path.exists():
        if not path.is_dir():
            raise ValueError(f"the OTF2 destination {path} is a file; name a directory (new, or empty)")
        if any(path.iterdir()):
            raise ValueError(f"the OTF2 destination {path} exists and is not empty; remove it or name a new "
                             "directory (an OTF2 archive is a directory of several files)")
        if not os.access(path, os.W_OK):
            raise ValueError(f"the OTF2 destination {path} is not writable; choose another directory")
        return path
    parent = path.parent
    if not parent.is_dir():
        raise ValueError(f"the OTF2 destination {path}: the directory {parent} does not exist; create it first "
                         "or choose another path")
    if not os.access(parent, os.W_OK):
        raise ValueError(f"the OTF2 destination {path}: the directory {parent} is not writable; choose another path")
    return path


def _ns(t: float) -> int:
    return max(0, int(round(float(t) * TIMER_RESOLUTION)))


def _uint32(value: int, undefined: int) -> int:
    return int(value) if 0 <= int(value) < 0xFFFFFFFF else undefined


class _Call:
    """One call's records, in the order they are written: Enter, what happens at its start,
    completions of earlier requests that fell inside it, what happens at its end, Leave."""

    __slots__ = ("t0", "t1", "region", "start", "inside", "end", "after")

    def __init__(self, t0: int, t1: int, region):
        self.t0, self.t1, self.region = t0, max(t0, t1), region
        self.start: list[tuple[int, str, tuple]] = []
        self.inside: list[tuple[int, str, tuple]] = []
        self.end: list[tuple[int, str, tuple]] = []
        #: completions that fell between this call's Leave and the next call's Enter
        self.after: list[tuple[int, str, tuple]] = []


def write_otf2(trace, directory: str | os.PathLike, archive_name: str = "traces", waits=None) -> Path:
    """Write *trace* as an OTF2 archive in *directory*.

    Parameters
    ----------
    trace : mpiworkbench.trace.model.Trace
        The gathered trace; ``trace.comms`` names the communicators its events' ``comm``
        field indexes.
    directory : str or os.PathLike
        Where the archive goes: a new directory (its parent must exist) or an empty one.
    archive_name : str, optional
        The archive's name: the anchor file is ``<directory>/<archive_name>.otf2``.
    waits : mpiworkbench.trace.waits.WaitStates, optional
        The trace's wait states (:func:`~mpiworkbench.trace.waits.wait_states`): written beside
        the archive as ``wait_states.json`` (:func:`write_wait_states`).

    Returns
    -------
    pathlib.Path
        The anchor file, what ``otf2.reader.open`` and Vampir open.

    Raises
    ------
    ValueError
        When *directory* exists and is not empty, or its parent does not exist
        (:func:`check_destination`).
    ImportError
        When the ``otf2`` package is not installed.

    Notes
    -----
    Times are nanoseconds from the trace's origin. Each rank's records are written in call order
    and never go back in time: a completion (of an ``MPI_Isend``, an ``MPI_Irecv``, a non-blocking
    collective) is written inside the call it happened in (the Wait or Test), or between two calls
    when it fell between them.

    Examples
    --------
    >>> path = write_otf2(trace, "wave-otf2")           # doctest: +SKIP
    >>> read_counts(path)[0]["MpiSend"]                 # doctest: +SKIP
    18
    """
    otf2 = require_otf2()
    from otf2.enums import (
        CollectiveOp, GroupType, LocationGroupType, LocationType, Paradigm, ParadigmClass, RegionRole,
    )

    undefined_u32 = int(otf2.Undefined.UINT32.value)
    path = check_destination(directory)
    ev = np.asarray(trace.events)
    nranks = int(trace.nranks)
    hosts = [(trace.hosts[r] if r < len(trace.hosts) and trace.hosts[r] else "localhost") for r in range(nranks)]
    comms = list(trace.comms)

    with otf2.writer.open(str(path), archive_name=archive_name, timer_resolution=TIMER_RESOLUTION) as archive:
        archive.creator = "mpiworkbench"
        dropped = [int(d) for d in getattr(trace, "dropped", [])]
        archive.description = f"mpiworkbench trace of {nranks} rank(s)" + (
            f"; calls not recorded (buffer full) per rank: {dropped}" if any(dropped) else "")
        archive.machine_name = hosts[0] if hosts else "localhost"
        defs = archive.definitions
        defs.paradigm(Paradigm.MPI, "MPI", ParadigmClass.PROCESS)

        # system tree: the machine, then one node per host, in the order the ranks name them
        machine = defs.system_tree_node("machine", class_name="machine")
        nodes = {h: defs.system_tree_node(h, class_name="node", parent=machine) for h in dict.fromkeys(hosts)}
        locations = []
        for rank in range(nranks):
            group = defs.location_group(f"rank {rank}", location_group_type=LocationGroupType.PROCESS,
                                        system_tree_parent=nodes[hosts[rank]])
            locations.append(defs.location(f"rank {rank}", type=LocationType.CPU_THREAD, group=group))
        # every MPI group is a list of ranks into this one, by world rank (OTF2's convention)
        defs.group("MPI_COMM_WORLD locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI,
                   members=locations)

        otf2_comms: dict[int, Any] = {}
        self_comms: set[int] = set()
        local_rank: dict[int, dict[int, int]] = {}  # comm index → world rank → rank in the comm
        for position, comm in enumerate(comms):
            index = int(getattr(comm, "id", position))
            members = [int(r) for r in (getattr(comm, "ranks", ()) or ()) if 0 <= int(r) < nranks]
            name = str(getattr(comm, "name", "") or f"communicator {index}")
            is_self = getattr(comm, "kind", "") == "self"
            # COMM_SELF is every rank's own: OTF2 has a group type for that (no members listed)
            group = defs.group(f"{name} (#{index})", paradigm=Paradigm.MPI,
                               group_type=GroupType.COMM_SELF if is_self else GroupType.COMM_GROUP,
                               members=[] if is_self else [locations[r] for r in members])
            parent = getattr(comm, "parent", None)
            # a parent defined later (should not happen) is left out rather than written forward
            otf2_comms[index] = defs.comm(name, group=group, parent=otf2_comms.get(parent) if parent is not None else None)
            local_rank[index] = {world: i for i, world in enumerate(members)}
            if is_self:
                self_comms.add(index)
        world_index = next((int(getattr(c, "id", i)) for i, c in enumerate(comms)
                            if getattr(c, "kind", "") == "world"
                            or str(getattr(c, "name", "")) in ("COMM_WORLD", "MPI_COMM_WORLD")), None)
        if world_index is None or sorted(local_rank[world_index]) != list(range(nranks)):
            # no COMM_WORLD with all ranks among the communicators: add one, point-to-point needs it
            group = defs.group("COMM_WORLD (world)", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                               members=locations)
            world_index = -1000
            otf2_comms[world_index] = defs.comm("COMM_WORLD", group=group)
            local_rank[world_index] = {r: r for r in range(nranks)}
        unknown: list[Any] = []

        def unknown_comm():
            if not unknown:
                group = defs.group("unknown communicator", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI,
                                   members=[])
                unknown.append(defs.comm("unknown communicator", group=group))
            return unknown[0]

        def p2p_comm(comm_index: int, peer: int):
            """The communicator and the peer's rank in it; COMM_WORLD when it is not known there."""
            if comm_index in self_comms:
                return otf2_comms[comm_index], 0  # to or from itself: rank 0 of its own COMM_SELF
            if comm_index in otf2_comms and peer in local_rank[comm_index]:
                return otf2_comms[comm_index], local_rank[comm_index][peer]
            return otf2_comms[world_index], peer

        def collective_comm(comm_index: int, root: int):
            if comm_index in self_comms:
                return otf2_comms[comm_index], 0
            if comm_index in otf2_comms:
                return otf2_comms[comm_index], local_rank[comm_index].get(root, undefined_u32)
            return unknown_comm(), undefined_u32

        regions: dict[int, Any] = {}

        def region(kind: int):
            if kind not in regions:
                name = KINDS[kind] if 0 <= kind < len(KINDS) else f"kind {kind}"
                regions[kind] = defs.region(name, canonical_name=name, description=FAMILY.get(name, "MPI call"),
                                            region_role=_role(name, RegionRole), paradigm=Paradigm.MPI)
            return regions[kind]

        has_op = "op" in (ev.dtype.names or ())
        for rank in range(nranks):
            rows = np.flatnonzero(ev["rank"] == rank) if len(ev) else np.zeros(0, int)
            rows = rows[np.argsort(ev["t0"][rows], kind="stable")]
            calls: list[_Call] = []
            pending: list[tuple[int, str, tuple]] = []  # completions, placed once every call is known
            for i in rows:
                e = ev[i]
                kind, name = int(e["kind"]), (KINDS[int(e["kind"])] if 0 <= int(e["kind"]) < len(KINDS) else "")
                call = _Call(_ns(e["t0"]), _ns(e["t1"]), region(kind))
                calls.append(call)
                comm_index, peer, source = int(e["comm"]), int(e["peer"]), int(e["peer2"])
                nbytes = max(0, int(e["bytes"]))
                request = int(i)  # a row is unique: a request id no other pending request has
                done = _ns(e["t_done"]) if e["t_done"] else None
                is_start = kind in STARTS
                started = int(e["op"]) if is_start and has_op else -1
                if peer >= 0 and (kind in SENDS or started in STARTED_SENDS):
                    comm, to = p2p_comm(comm_index, peer)
                    tag = _uint32(e["tag"], undefined_u32)
                    if kind in _BLOCKING_SENDS:
                        call.start.append((call.t0, "mpi_send", (to, comm, tag, nbytes)))
                    else:
                        call.start.append((call.t0, "mpi_isend", (to, comm, tag, nbytes, request)))
                        if done is not None:
                            pending.append((max(done, call.t1), "mpi_isend_complete", (request,)))
                if source >= 0 and (kind in RECEIVES or started in STARTED_RECEIVES):
                    comm, frm = p2p_comm(comm_index, source)
                    tag = _uint32(e["tag2"], undefined_u32)
                    if kind in _NONBLOCKING_RECEIVES or is_start:
                        call.start.append((call.t0, "mpi_irecv_request", (request,)))
                        # completed in a later Wait/Test (t_done), or, not known when, at the call's end
                        pending.append((max(done if done is not None else call.t1, call.t1), "mpi_irecv",
                                        (frm, comm, tag, nbytes, request)))
                    else:
                        call.end.append((call.t1, "mpi_recv", (frm, comm, tag, nbytes)))
                if kind in COLLECTIVES or kind in NONBLOCKING_COLLECTIVES:
                    base = _base(name)
                    op = getattr(CollectiveOp, _OPS.get(base, "BARRIER"))
                    comm, root = collective_comm(comm_index, peer)
                    sent, received = _sizes(base, rank == peer, nbytes)
                    if kind in COLLECTIVES:
                        call.start.append((call.t0, "mpi_collective_begin", ()))
                        call.end.append((call.t1, "mpi_collective_end", (op, comm, root, sent, received)))
                    else:
                        call.start.append((call.t0, "non_blocking_collective_request", (request,)))
                        if done is not None:
                            pending.append((max(done, call.t1), "non_blocking_collective_complete",
                                            (op, comm, root, sent, received, request)))
            _place(calls, pending)
            writer = archive.event_writer_from_location(locations[rank])
            _write_rank(writer, calls)
    if waits is not None:
        write_wait_states(waits, path)
    return path / f"{archive_name}.otf2"


def write_wait_states(waits, directory: str | os.PathLike) -> Path:
    """Write *waits* (:class:`~mpiworkbench.trace.waits.WaitStates`) as ``wait_states.json`` in
    *directory* (the format is in this module's text); returns its path."""
    out = Path(directory) / "wait_states.json"
    data = {"format": "mpiworkbench wait states", "version": 1, "patterns": waits.to_dict()["patterns"],
            "clock": "seconds from the archive's origin (its timestamps / 1e9)",
            "summary": waits.to_dict(), "intervals": waits.records()}
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return out


def _role(name: str, RegionRole):
    family = FAMILY.get(name, "")
    base = _base(name)
    if family == "barrier" or base == "Barrier":
        return RegionRole.BARRIER
    if base in _ONE_TO_ALL:
        return RegionRole.COLL_ONE2ALL
    if base in _ALL_TO_ONE:
        return RegionRole.COLL_ALL2ONE
    if base in _ALL_TO_ALL:
        return RegionRole.COLL_ALL2ALL
    if family in ("collective", "nonblocking collective"):
        return RegionRole.COLL_OTHER
    if family in ("one-sided", "one-sided sync"):
        return RegionRole.RMA
    if family in ("send", "receive", "sendrecv", "probe", "wait", "test", "persistent", "partitioned"):
        return RegionRole.POINT2POINT
    return RegionRole.FUNCTION


def _sizes(base: str, is_root: bool, nbytes: int) -> tuple[int, int]:
    """(sent, received) of one rank's part of a collective, from the one byte count the interposer
    records (the rank's own part: its contribution, or what a scatter gave it)."""
    if base == "Barrier":
        return 0, 0
    if base in ("Scatter", "Scatterv") or (base == "Bcast" and not is_root):
        return 0, nbytes
    if base == "Allreduce" or (base == "Reduce" and is_root):
        return nbytes, nbytes
    return nbytes, 0


def _place(calls: list[_Call], pending: list[tuple[int, str, tuple]]) -> None:
    """Put each completion inside the call whose span holds its time, or after the last call
    that began before it (between two calls)."""
    starts = [c.t0 for c in calls]
    for record in sorted(pending, key=lambda r: r[0]):
        k = bisect.bisect_right(starts, record[0]) - 1
        if k < 0:  # cannot happen for a completion of a recorded call; kept valid anyway
            k = 0
        call = calls[k]
        (call.inside if record[0] <= call.t1 else call.after).append(record)


def _write_rank(writer, calls: list[_Call]) -> None:
    """Write one rank's calls; times never decrease (a completion placed inside a call whose
    start rounds later is written at that start)."""
    last = 0
    for call in calls:
        for t, method, args in [(call.t0, "enter", (call.region,)), *call.start,
                                *sorted(call.inside, key=lambda r: r[0]), *call.end,
                                (call.t1, "leave", (call.region,)), *sorted(call.after, key=lambda r: r[0])]:
            last = max(last, t)
            getattr(writer, method)(last, *args)


#: Record types counted together by :func:`read_counts`.
_SEND_LIKE = ("MpiSend", "MpiIsend")
_RECV_LIKE = ("MpiRecv", "MpiIrecv")


def read_counts(path: str | os.PathLike) -> dict[int, dict[str, Any]]:
    """Count an OTF2 archive's records per location (what :func:`write_otf2` wrote, read back).

    Parameters
    ----------
    path : str or os.PathLike
        The anchor file (``…/traces.otf2``), or the archive's directory when it holds exactly one.

    Returns
    -------
    dict
        Location index (in definition order: the rank, for archives of :func:`write_otf2`) →
        ``{"name": str, "Enter": int, "Leave": int, "MpiSend": int (MpiSend + MpiIsend),
        "MpiRecv": int (MpiRecv + MpiIrecv), "MpiCollectiveBegin": int, "MpiCollectiveEnd": int,
        "NonBlockingCollectiveRequest": int, "NonBlockingCollectiveComplete": int,
        "records": {record type: count}, "regions": {region name: Enter count},
        "comms": {communicator name: collective records (end or complete) on it}}``.

    Raises
    ------
    ImportError
        When the ``otf2`` package is not installed.
    FileNotFoundError
        When *path* is neither an anchor file nor a directory with one.
    """
    otf2 = require_otf2()
    anchor = Path(path)
    if anchor.is_dir():
        found = sorted(anchor.glob("*.otf2"))
        if len(found) != 1:
            raise FileNotFoundError(f"{anchor} holds {len(found)} OTF2 anchor files (*.otf2); name one of them")
        anchor = found[0]
    if not anchor.is_file():
        raise FileNotFoundError(f"no OTF2 anchor file at {anchor}")
    out: dict[int, dict[str, Any]] = {}
    with otf2.reader.open(str(anchor)) as reader:
        index = {}
        for i, location in enumerate(reader.definitions.locations):
            index[location] = i
            out[i] = {"name": location.name, "records": Counter(), "regions": Counter(), "comms": Counter()}
        for location, event in reader.events:
            entry = out[index[location]]
            kind = type(event).__name__
            entry["records"][kind] += 1
            if kind == "Enter":
                entry["regions"][event.region.name] += 1
            if kind in ("MpiCollectiveEnd", "NonBlockingCollectiveComplete"):
                entry["comms"][event.communicator.name] += 1
    for entry in out.values():
        records = entry["records"]
        entry.update({
            "Enter": records["Enter"], "Leave": records["Leave"],
            "MpiSend": sum(records[k] for k in _SEND_LIKE), "MpiRecv": sum(records[k] for k in _RECV_LIKE),
            **{k: records[k] for k in ("MpiCollectiveBegin", "MpiCollectiveEnd",
                                        "NonBlockingCollectiveRequest", "NonBlockingCollectiveComplete")},
        })
        for key in ("records", "regions", "comms"):
            entry[key] = dict(entry[key])
    return out


__all__ = ["TIMER_RESOLUTION", "check_destination", "read_counts", "require_otf2", "write_otf2"]
