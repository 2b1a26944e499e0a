"""Which Python line made each MPI call: the call sites of a trace.

The interposer records MPI calls in C and never sees Python. This module records, beside it,
the lines that Python functions calling MPI execute (``sys.settrace`` with line events only in
the frames whose code names an mpi4py method: every other frame costs one dictionary look-up
when it starts), each with the time it ran on the interposer's clock (``CLOCK_MONOTONIC``).
An MPI call's site is the last line recorded on its rank before the call began: the same
``file:line in function`` the hang report names (the innermost frame outside the libraries).

Engine-side, like :mod:`~mpiworkbench.trace.recorder`::

    recorder.start(); sites.start()
    ...                                            # the traced code
    trace = recorder.finish(comm)                  # collective
    where = sites.finish(comm, trace)              # collective: CallSites on rank 0

Calls made from compiled code (numba-mpi inside ``@njit``, the C backend) have the line of the
Python call that entered that code, or none.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from mpiworkbench.trace import recorder

#: Frames of these files are never a call site (the hang report skips the same libraries).
_LIBRARY = ("site-packages", "/lib/python3", "<frozen", "mpiworkbench/trace/")

_state: dict = {}


@dataclass
class CallSites:
    """The lines that called MPI, per rank, on a trace's time axis.

    Attributes
    ----------
    table : list of str
        ``file:line in function`` of every line seen.
    times : list of numpy.ndarray
        Per rank, when each recorded line began (seconds, the trace's axis), ascending.
    ids : list of numpy.ndarray
        Per rank, the line (index in *table*) of each time.
    """

    table: list[str] = field(default_factory=list)
    times: list[np.ndarray] = field(default_factory=list)
    ids: list[np.ndarray] = field(default_factory=list)

    def of_events(self, events: np.ndarray) -> np.ndarray:
        """Per event of a trace (``TRACE_DTYPE``), the index in :attr:`table` of the line that
        made the call (-1: none recorded)."""
        out = np.full(len(events), -1, dtype=np.int64)
        for rank, (times, ids) in enumerate(zip(self.times, self.ids)):
            mine = np.flatnonzero(events["rank"] == rank)
            if not len(mine) or not len(times):
                continue
            before = np.searchsorted(times, events["t0"][mine], side="right") - 1
            ok = before >= 0
            out[mine[ok]] = ids[before[ok]]
        return out

    def to_dict(self) -> dict:
        return {"table": list(self.table), "times": [t.tolist() for t in self.times],
                "ids": [i.tolist() for i in self.ids]}

    @classmethod
    def from_dict(cls, data: dict) -> "CallSites":
        return cls(list(data["table"]), [np.asarray(t, dtype=np.float64) for t in data["times"]],
                   [np.asarray(i, dtype=np.int64) for i in data["ids"]])


def _mpi_names() -> frozenset[str]:
    """Names of mpi4py's methods that can make an MPI call (attributes of a code object that
    names one of them are looked at line by line)."""
    from mpi4py import MPI  # engine-side only: the notebook kernel imports this module without MPI

    names = set()
    for cls in (MPI.Intracomm, MPI.Cartcomm, MPI.Request, MPI.Prequest, MPI.Message, MPI.Win):
        for name in dir(cls):
            if not name.startswith("_") and callable(getattr(cls, name, None)):
                names.add(name)
    return frozenset(names)


def _wanted(code) -> bool:
    known = _state["wanted"].get(code)
    if known is None:
        known = (not any(part in code.co_filename for part in _LIBRARY)
                 and not _state["names"].isdisjoint(code.co_names))
        _state["wanted"][code] = known
    return known


def _site(code, line: int) -> int:
    key = (code, line)
    sid = _state["ids"].get(key)
    if sid is None:
        sid = _state["ids"][key] = len(_state["table"])
        _state["table"].append(f"{code.co_filename}:{line} in {code.co_name}")
    return sid


def _local(frame, event, arg):
    if event == "line":
        _state["t"].append(time.monotonic())
        _state["s"].append(_site(frame.f_code, frame.f_lineno))
    elif event == "return":
        back = frame.f_back  # the caller's line runs on: it makes the calls that follow
        if back is not None and _wanted(back.f_code):
            _state["t"].append(time.monotonic())
            _state["s"].append(_site(back.f_code, back.f_lineno))
    return _local


def _global(frame, event, arg):
    return _local if _wanted(frame.f_code) else None


def start() -> None:
    """Record, from now on in this thread, the lines of the functions that call MPI (those
    already running included). A tracer already set (a debugger, coverage) is restored by
    :func:`stop`."""
    _state.update(names=_mpi_names(), wanted={}, ids={}, table=[], t=[], s=[], previous=sys.gettrace())
    sys.settrace(_global)
    frame = sys._getframe(1)
    while frame is not None:
        if _wanted(frame.f_code):
            frame.f_trace = _local
            _state["t"].append(time.monotonic())
            _state["s"].append(_site(frame.f_code, frame.f_lineno))
        frame = frame.f_back


def stop() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Stop recording; this rank's line times (its own monotonic clock), line ids and table."""
    if "previous" not in _state:
        return np.zeros(0), np.zeros(0, np.int64), []
    sys.settrace(_state.pop("previous"))
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_trace is _local:
            frame.f_trace = None
        frame = frame.f_back
    return np.asarray(_state["t"], dtype=np.float64), np.asarray(_state["s"], dtype=np.int64), list(_state["table"])


def finish(comm, trace) -> CallSites | None:
    """Collective, after :func:`recorder.finish <mpiworkbench.trace.recorder.finish>`: stop and
    gather every rank's lines to rank 0, put on *trace*'s time axis (pass the trace on rank 0,
    anything elsewhere); ``None`` except on rank 0.

    A rank's lines move by the same amount as its events did: the difference between its first
    event's time as recorded and in the trace (both clocks are the rank's ``CLOCK_MONOTONIC``).
    """
    times, ids, table = stop()
    events = recorder.local_events()
    first = float(events["t0"][0]) if len(events) else None
    parts = comm.gather((times, ids, table, first), root=0)
    if comm.rank != 0:
        return None
    merged: list[str] = []
    index: dict[str, int] = {}
    out = CallSites(merged)
    for rank, (t, s, tab, raw_first) in enumerate(parts):
        mapping = np.array([index.setdefault(name, len(index)) for name in tab], dtype=np.int64)
        mine = trace.events["t0"][trace.events["rank"] == rank] if trace is not None else []
        if raw_first is None or not len(mine):
            out.times.append(np.zeros(0))
            out.ids.append(np.zeros(0, np.int64))
            continue
        shift = raw_first - float(mine[0])
        out.times.append(t - shift)
        out.ids.append(mapping[s] if len(s) else np.zeros(0, np.int64))
    merged.extend(sorted(index, key=index.get))
    return out


def trace_call(comm, func, *args, capacity: int | None = None, **kwargs):
    """Collective: run ``func(*args, **kwargs)`` with its MPI calls and their lines recorded;
    ``(result, trace, sites)`` (the trace and its :class:`CallSites` on rank 0, ``None`` elsewhere)."""
    recorder.start(capacity or recorder.DEFAULT_CAPACITY)
    start()
    try:
        result = func(*args, **kwargs)
    except BaseException:
        stop()
        recorder.stop()
        raise
    trace = recorder.finish(comm)
    return result, trace, finish(comm, trace)
