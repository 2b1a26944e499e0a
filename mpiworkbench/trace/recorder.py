"""Switch the interposer's recording on and off in this rank, and gather every rank's events.

Engine-side and plain MPI: the same calls run in ipyparallel engines and under ``mpiexec``::

    recorder.start()                 # every rank
    ...                              # any MPI code: mpi4py, the C backend, numba-mpi
    trace = recorder.finish(comm)    # collective: a Trace on rank 0, None elsewhere

Off (never started, or stopped), a wrapped call only updates this rank's in-flight record.
With *lines*, :mod:`~mpiworkbench.trace.sites` records beside the events the Python lines that
made the calls: ``trace.sites``, what the wait states name. Off by default here (a line costs a
Python call, much more than an event: docs/tracing.md); the notebook's ``wb.trace()`` and
``%%px --trace`` switch it on.
"""

from __future__ import annotations

import ctypes
import os
import socket

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.trace import library, sites
from mpiworkbench.trace.events import COMM_DTYPE, EVENT_DTYPE, KINDS, SLOT_DTYPE
from mpiworkbench.trace.model import Trace

#: Events each rank can record before the rest are counted as dropped (56 bytes each: 56 MB).
DEFAULT_CAPACITY = 1_000_000

#: Whether :func:`start` records the Python lines of the calls when not told
#: (``MPIWORKBENCH_TRACE_LINES=1`` in the ranks' environment: on, e.g. for a benchmark of it).
LINES = os.environ.get("MPIWORKBENCH_TRACE_LINES", "0") == "1"

_state: dict[str, float] = {}


class TracingUnavailable(RuntimeError):
    """This process was started without the interposer."""


def available() -> bool:
    """Whether this process's MPI calls go through the interposer (initialises MPI)."""
    mpi.MPI()
    lib = library.handle()
    return lib is not None and bool(lib.wbtrace_loaded())


def _lib():
    mpi.MPI()  # the interposer maps its slot when MPI is initialised
    lib = library.handle()
    if lib is None or not lib.wbtrace_loaded():
        raise TracingUnavailable(
            "MPI tracing is unavailable in this process: it was started without the interposer. "
            "Workbench clusters preload it (unless MPIWORKBENCH_INTERPOSER=0); for a job of your "
            "own, run `mpiworkbench trace -- COMMAND …` or mpiexec -genv LD_PRELOAD "
            "$(python -c 'from mpiworkbench.trace import library; print(library.build())') …"
        )
    if (lib.wbtrace_sizeof_event() != EVENT_DTYPE.itemsize or lib.wbtrace_sizeof_slot() != SLOT_DTYPE.itemsize
            or lib.wbtrace_sizeof_comm() != COMM_DTYPE.itemsize or lib.wbtrace_nkinds() != len(KINDS)
            or lib.wbtrace_kind_name(len(KINDS) - 1).decode() != KINDS[-1]):
        raise TracingUnavailable("the loaded interposer does not match this mpiworkbench (its records differ): "
                                 "restart the ranks so that they load the interposer built from this version")
    return lib


def start(capacity: int = DEFAULT_CAPACITY, lines: bool = LINES) -> None:
    """Record this rank's MPI calls from now on into a fresh buffer of *capacity* events, and
    with *lines* the Python lines that make them (:mod:`~mpiworkbench.trace.sites`)."""
    if int(capacity) < 1:
        raise ValueError(f"capacity must be at least 1 event; got {capacity}")
    lib = _lib()
    code = lib.wbtrace_start(int(capacity))
    if code != 0:
        raise RuntimeError(f"could not allocate a trace buffer of {capacity} events in /dev/shm (code {code})")
    _state["t_start"] = lib.wbtrace_now()
    if lines:
        sites.start()
    else:
        sites.stop()


def stop() -> np.ndarray:
    """Stop recording (events and lines); this rank's events (a copy, in call order)."""
    sites.stop()
    lib = _lib()
    lib.wbtrace_stop()
    _state["t_stop"] = lib.wbtrace_now()
    return local_events()


def is_on() -> bool:
    return available() and bool(library.handle().wbtrace_is_on())


def local_events() -> np.ndarray:
    """The events recorded so far in this rank (a copy)."""
    lib = _lib()
    n = int(lib.wbtrace_nevents())
    address = lib.wbtrace_events()
    if n == 0 or not address:
        return np.zeros(0, EVENT_DTYPE)
    raw = (ctypes.c_char * (n * EVENT_DTYPE.itemsize)).from_address(address)
    return np.frombuffer(bytes(raw), dtype=EVENT_DTYPE).copy()


def local_comms() -> list[dict]:
    """The communicators this rank has used or made since MPI started (the interposer's table,
    :data:`~mpiworkbench.trace.events.COMM_DTYPE` fields, plus ``members``: their world ranks)."""
    lib = _lib()
    n = int(lib.wbtrace_ncomms())
    address = lib.wbtrace_comms()
    if n == 0 or not address:
        return []
    raw = (ctypes.c_char * (n * COMM_DTYPE.itemsize)).from_address(address)
    table = np.frombuffer(bytes(raw), dtype=COMM_DTYPE)
    out = []
    for i, row in enumerate(table):
        entry = {name: (row[name].tolist() if name != "name" else row[name].decode(errors="replace"))
                 for name in COMM_DTYPE.names}
        members = (ctypes.c_int32 * max(int(row["size"]), 1))()
        got = lib.wbtrace_comm_members(i, members, int(row["size"]))
        entry["members"] = list(members[:got])
        out.append(entry)
    return out


def clock_offsets(comm, rounds: int = 8) -> list[float]:
    """Collective: each rank's clock minus rank 0's, estimated by ping-pong with rank 0 (the
    sample with the shortest round trip wins). Returned on every rank."""
    lib = _lib()
    offsets = [0.0] * comm.size
    for peer in range(1, comm.size):
        if comm.rank == 0:
            best = (float("inf"), 0.0)
            for _ in range(rounds):
                t0 = lib.wbtrace_now()
                comm.send(None, dest=peer, tag=9101)
                remote = comm.recv(source=peer, tag=9102)
                t1 = lib.wbtrace_now()
                best = min(best, (t1 - t0, remote - 0.5 * (t0 + t1)))
            offsets[peer] = best[1]
        elif comm.rank == peer:
            for _ in range(rounds):
                comm.recv(source=0, tag=9101)
                comm.send(lib.wbtrace_now(), dest=0, tag=9102)
    return comm.bcast(offsets, root=0)


def finish(comm, estimate_offsets: bool | None = None) -> Trace | None:
    """Collective: stop recording on every rank and gather the events to rank 0.

    Clock offsets are estimated only when the ranks are on more than one host (one host's
    processes share CLOCK_MONOTONIC), or when *estimate_offsets* is True.
    """
    lines = sites.stop() if sites.is_on() else None
    events = stop()
    lib = _lib()
    mine = {
        "events": events,
        "lines": lines,
        "host": socket.gethostname(),
        "dropped": int(lib.wbtrace_dropped()),
        "comms": local_comms(),
        "window": (_state.get("t_start", 0.0), _state.get("t_stop", 0.0)),
    }
    parts = comm.gather(mine, root=0)
    hosts = comm.bcast(None if parts is None else [p["host"] for p in parts], root=0)
    global_clock = len(set(hosts)) == 1
    estimate = (not global_clock) if estimate_offsets is None else estimate_offsets
    offsets = clock_offsets(comm) if estimate else [0.0] * comm.size
    if comm.rank != 0:
        return None
    trace = Trace.from_ranks(
        [p["events"] for p in parts],
        offsets=offsets if not global_clock else [0.0] * comm.size,
        estimated_offsets=offsets,
        hosts=hosts,
        dropped=[p["dropped"] for p in parts],
        windows=[p["window"] for p in parts],
        comm_tables=[p["comms"] for p in parts],
        causal=not global_clock,
    )
    if any(p["lines"] is not None for p in parts):
        # a rank's lines move as its events did: its window's start, recorded and in the trace
        shifts = [p["window"][0] - trace.windows[r][0] if p["window"][0] else None for r, p in enumerate(parts)]
        trace.sites = sites.place([p["lines"] for p in parts], shifts)
    return trace


def trace_call(comm, func, *args, capacity: int = DEFAULT_CAPACITY, lines: bool = LINES, **kwargs):
    """Collective: run ``func(*args, **kwargs)`` traced; returns ``(result, trace)`` (trace on
    rank 0, ``None`` elsewhere; with *lines*, ``trace.sites`` names the calls' Python lines).
    Recording stops even when *func* raises."""
    start(capacity, lines)
    try:
        result = func(*args, **kwargs)
    except BaseException:
        stop()
        raise
    return result, finish(comm)


def finish_world() -> Trace | None:
    """:func:`finish` on ``COMM_WORLD`` (what a notebook's ``wb.trace()`` runs on every engine)."""
    return finish(mpi.world())
