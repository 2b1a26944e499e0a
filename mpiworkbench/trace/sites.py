"""Which Python line made each MPI call: the call sites of a trace.

The interposer records MPI calls in C and never sees Python. This module records, beside it,
the lines that Python functions calling MPI execute (``sys.settrace`` with line events only in
the frames whose code names an mpi4py method: every other frame costs one dictionary look-up
when it starts), each with the time it ran on the interposer's clock (``CLOCK_MONOTONIC``).
An MPI call's site is the last line recorded on its rank before the call began: the same
``file:line in function`` the hang report names (the innermost frame outside the libraries).

:mod:`~mpiworkbench.trace.recorder` runs it beside the interposer (engine-side)::

    recorder.start()                               # events, and lines (lines=False: events only)
    ...                                            # the traced code
    trace = recorder.finish(comm)                  # collective: trace.sites is a CallSites on rank 0

Recording lines costs a call of a Python function per line run in the functions that call MPI
(docs/tracing.md says what that costs a tight loop of small messages, and how to switch it off).

Calls made from compiled code (numba-mpi inside ``@njit``, the C backend) have the line of the
Python call that entered that code, or none.
"""

from __future__ import annotations

import sys
import time
from array import array
from dataclasses import dataclass, field

import numpy as np

#: Frames of these files are never a call site (the hang report skips the same libraries).
_LIBRARY = ("site-packages", "/lib/python3", "<frozen", "mpiworkbench/trace/")

_state: dict = {}

#: Lines a rank records in one trace at most (16 bytes each): a trace's events are bounded by
#: the recorder's capacity, its lines by this. Past it the rank stops recording lines, and its
#: later calls have no site (-1) rather than a stale one.
MAX_LINES = 8_000_000


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
        Per rank, the line (index in *table*) of each time; -1 from when that rank stopped
        recording lines (:data:`MAX_LINES`).
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
        _append_t(_now())
        _append_s(_site(frame.f_code, frame.f_lineno))
        if len(_state["t"]) >= MAX_LINES:
            return _full(frame)
    elif event == "return":
        back = frame.f_back  # the caller's line runs on: it makes the calls that follow
        if back is not None and _wanted(back.f_code):
            _append_t(_now())
            _append_s(_site(back.f_code, back.f_lineno))
    return _local


def _global(frame, event, arg):
    return _local if _wanted(frame.f_code) else None


def _full(frame) -> None:
    """:data:`MAX_LINES` reached: record no more lines (the frames still running stop being
    traced), and mark the rest of the trace as of unknown site."""
    _append_t(_now())
    _append_s(-1)
    sys.settrace(_state["previous"])
    while frame is not None:
        if frame.f_trace is _local:
            frame.f_trace = None
        frame = frame.f_back


_now = time.monotonic
_append_t = _append_s = None  # the bound appends of the lists being recorded (start sets them)


def is_on() -> bool:
    """Whether lines are being recorded in this process."""
    return "previous" in _state


def start() -> None:
    """Record, from now on in this thread, the lines of the functions that call MPI (those
    already running included); a recording already on starts afresh. A tracer already set (a
    debugger, coverage) is restored by :func:`stop`."""
    global _append_t, _append_s
    if is_on():
        stop()
    _state.update(names=_mpi_names(), wanted={}, ids={}, table=[], t=array("d"), s=array("q"),
                  previous=sys.gettrace())
    _append_t, _append_s = _state["t"].append, _state["s"].append
    sys.settrace(_global)
    frame = sys._getframe(1)
    while frame is not None:
        if _wanted(frame.f_code):
            frame.f_trace = _local
            _append_t(_now())
            _append_s(_site(frame.f_code, frame.f_lineno))
        frame = frame.f_back


def stop() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Stop recording; this rank's line times (its own monotonic clock), line ids and table
    (empty when it was not on)."""
    if not is_on():
        return np.zeros(0), np.zeros(0, np.int64), []
    sys.settrace(_state.pop("previous"))
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_trace is _local:
            frame.f_trace = None
        frame = frame.f_back
    times, ids, table = _state.pop("t"), _state.pop("s"), _state.pop("table")
    _state.clear()  # nothing of the recording outlives it
    return np.array(times, dtype=np.float64), np.array(ids, dtype=np.int64), list(table)


def place(parts: list, shifts: list) -> CallSites:
    """Every rank's lines (what :func:`stop` returned on it; ``None``: not recorded) on a
    trace's time axis: rank *r*'s times less ``shifts[r]``, the amount its events moved when
    the trace was built (its own clock minus the trace's axis; ``None``: not known, its lines
    are left out). The ranks' tables are merged into one."""
    index: dict[str, int] = {}
    out = CallSites()
    for part, shift in zip(parts, shifts):
        if part is None or shift is None or not len(part[0]):
            out.times.append(np.zeros(0))
            out.ids.append(np.zeros(0, np.int64))
            continue
        t, s, tab = part
        mapping = np.array([*(index.setdefault(name, len(index)) for name in tab), -1], dtype=np.int64)
        out.times.append(np.asarray(t, dtype=np.float64) - shift)
        out.ids.append(mapping[np.asarray(s, dtype=np.int64)])  # -1 (no site) stays -1: mapping's last
    out.table.extend(sorted(index, key=index.get))
    return out

