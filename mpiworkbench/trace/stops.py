"""Where a rank stopped in the debugger, readable from outside it.

A rank stopped at a breakpoint looks, from outside, exactly like a hung one: its cell does not
finish, and the ranks that wait for it sit in MPI calls. The rank's kernel therefore records
each stop and each continue in a small file beside its in-flight slot
(``/dev/shm/mpiworkbench-<pid>.debug``, :func:`stop_path`): whether it is stopped now, where
(file, line, function), and its recent pauses as ``time.monotonic()`` intervals (the
interposer's clock, one per host). The client reads it:

* the timeout of a call does not count the time a rank spent stopped (:func:`paused_within`),
  so a world being debugged is never reported as hung, nor ended by the workbench's timeouts;
* the state and the hang report say "rank 0 stopped at a breakpoint (cell line 4)"
  (:func:`describe`).

Written by :func:`record` from the kernel's debug-event callback (the engines' kernels are made
debuggable by :mod:`mpiworkbench.client.cluster.engine_start`); nothing is written while no debugger is
attached, and the file goes when the process exits (or, killed, is swept with its slot by
:func:`mpiworkbench.trace.hang.sweep_stale`).
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

#: How many past pauses a rank keeps (enough for any call's timeout window: a step is a pause).
KEPT_PAUSES = 256
#: Packages and modules the kernel's own frames come from (debugpy's, ipykernel's…): skipped to
#: find the user's line. A frame is theirs when a directory of its file, or its module, is named so.
_MACHINERY = frozenset({"debugpy", "_pydevd_bundle", "_pydev_bundle", "pydevd", "ipykernel", "IPython",
                        "ipyparallel", "asyncio", "threading", "tornado", "zmq", "concurrent", "selectors",
                        "runpy", "traitlets"})


def stop_path(pid: int) -> str:
    return f"/dev/shm/mpiworkbench-{pid}.debug"


_state: dict[str, Any] = {"stopped_since": None, "where": None, "reason": None, "pauses": []}
_lock = threading.Lock()


def _main_frame_where() -> dict[str, Any] | None:
    """The user's innermost frame on the main thread: the line it is stopped at."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _MACHINERY.intersection(Path(filename).with_suffix("").parts):
            return {"file": filename, "line": frame.f_lineno, "function": frame.f_code.co_name}
        frame = frame.f_back
    return None


#: The key of a ``stopped`` event's body under which a rank's kernel tells where its user's code
#: stopped (:func:`record`): what a client that sees only the events (a relay) shows.
WHERE_KEY = "mpiworkbenchWhere"


def record(event: dict[str, Any]) -> None:
    """In a rank's kernel: note a DAP ``stopped`` or ``continued`` event (others are ignored);
    a ``stopped`` event's body gets where the user's code stopped (:data:`WHERE_KEY`)."""
    kind = event.get("event")
    if kind not in ("stopped", "continued"):
        return
    now = time.monotonic()
    with _lock:
        if kind == "stopped":
            if _state["stopped_since"] is None:
                _state["stopped_since"] = now
            _state["where"] = _main_frame_where()
            if isinstance(event.get("body"), dict):
                event["body"][WHERE_KEY] = _state["where"]
            _state["reason"] = (event.get("body") or {}).get("reason")
        else:
            if _state["stopped_since"] is not None:
                _state["pauses"] = [*_state["pauses"][-(KEPT_PAUSES - 1):], [_state["stopped_since"], now]]
            _state["stopped_since"] = None
        _write(os.getpid())


def _write(pid: int) -> None:
    path = stop_path(pid)
    if not _state.get("registered"):
        atexit.register(_remove, path)
        _state["registered"] = True
    tmp = f"{path}.tmp"
    Path(tmp).write_text(json.dumps({k: _state[k] for k in ("stopped_since", "where", "reason", "pauses")}))
    os.replace(tmp, path)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def read(pid: int) -> dict[str, Any] | None:
    """The stop record of process *pid* on this host, ``None`` if it never stopped."""
    try:
        return json.loads(Path(stop_path(pid)).read_text())
    except (OSError, ValueError):
        return None


def is_stopped(stop: dict[str, Any] | None) -> bool:
    return bool(stop) and stop.get("stopped_since") is not None


def paused_within(stop: dict[str, Any] | None, since: float, now: float | None = None) -> float:
    """Seconds of [*since*, *now*] the rank spent stopped (a stop still under way counts to *now*)."""
    if not stop:
        return 0.0
    now = time.monotonic() if now is None else now
    spans = list(stop.get("pauses") or [])
    if stop.get("stopped_since") is not None:
        spans.append([stop["stopped_since"], now])
    return sum(max(0.0, min(end, now) - max(start, since)) for start, end in spans)


def where_text(stop: dict[str, Any]) -> str:
    """``cell line 4`` / ``halo.py line 52, in exchange``: where a stopped rank is."""
    where = stop.get("where") or {}
    if not where:
        return "its line: ask its debugger"
    name = Path(where.get("file", "?")).name
    # ipykernel's cells are files named by their code's hash in /tmp/ipykernel_<pid>/
    if Path(where.get("file", "")).parent.name.startswith("ipykernel_") or where.get("file", "").startswith("<"):
        return f"cell line {where.get('line')}"
    function = where.get("function")
    return f"{name} line {where.get('line')}" + (f", in {function}" if function and function != "<module>" else "")


def describe(rank: int, stop: dict[str, Any]) -> str:
    """``rank 0 stopped at a breakpoint (cell line 4)``."""
    reason = stop.get("reason") or "breakpoint"
    what = {"breakpoint": "at a breakpoint", "step": "after a step", "exception": "at an exception",
            "pause": "paused", "entry": "at entry"}.get(reason, f"({reason})")
    return f"rank {rank} stopped {what} ({where_text(stop)})"
