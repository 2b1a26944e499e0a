"""A rank's debugpy between debugging sessions, on the engine (what
:func:`~mpiworkbench.client.cluster.engine_start.debuggable` adds to the engine's kernel).

ipykernel starts debugpy in the rank's process at the first ``debug_request``, and debugpy, once
started, stays: its tracing of every Python line and call goes on after the client has detached
(debugpy's own issue 1655: "once you start debugpy in a process, the process is forever slow
thereafter"). Measured on this project's engines, after one ``wb.debug()`` session the ranks ran
a pure-Python loop 2.2 times slower and imported the backends (``registry.availability()``) 17
times slower, 55 s instead of 3.2, until the world restarted. Here:

* :func:`match_tracing`: each request the rank's main thread takes up (a cell, a function) runs
  traced only while a client has the rank's debugger started (debugpy's public
  ``trace_this_thread``); a session that starts later traces its requests again;
* :func:`let_go_of_late_stops`: after a ``disconnect``, a stop no client will continue is let go;
* :func:`recording_stops`: every stop and continue noted where the notebook reads it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

#: Whether this process's main thread was last set traced by :func:`match_tracing` (debugpy traces
#: every thread once started).
_traced = [True]


def match_tracing(debugger: Any) -> None:
    """On the rank's main thread, before it takes up a request: traced by debugpy only while a
    client has the rank's *debugger* (ipykernel's) started; nothing to do before debugpy ever
    started here. A thread a request runs on (its tracing is per thread) is the main one."""
    if debugger is None or not getattr(debugger, "debugpy_initialized", False):
        return
    wanted = bool(getattr(debugger, "is_started", False))
    if wanted == _traced[0]:
        return
    try:
        import debugpy

        debugpy.trace_this_thread(wanted)
    except Exception:  # noqa: BLE001 - tracing is an optimisation here: never break the request
        return
    _traced[0] = wanted


#: Seconds after a client's ``disconnect`` during which the rank itself lets go of any stop that
#: completes (:func:`let_go_of_late_stops`), and how often it looks.
LATE_STOP_GUARD_S = 20.0
LATE_STOP_EVERY_S = 0.05


def let_go_of_late_stops(debugger: Any) -> None:
    """After a client's ``disconnect``, let go of a stop no client will ever continue.

    debugpy drops every breakpoint and resumes every thread at a ``disconnect``; a thread that
    had matched a breakpoint just before, and marks itself suspended just after (its stop still
    under way when the GIL passed to the control thread: seen on a loaded machine), is held
    stopped with no client attached, and the cell never ends. For :data:`LATE_STOP_GUARD_S`
    seconds, unless a client starts the debugger again (its stops are then its own), a thread
    of the rank's resumes any thread debugpy holds suspended."""
    if debugger is None:
        return
    # one guard per rank: a later disconnect extends the running guard's watch, not a thread more
    debugger.mpiworkbench_guard_until = time.monotonic() + LATE_STOP_GUARD_S
    running = getattr(debugger, "mpiworkbench_guard", None)
    if running is not None and running.is_alive():
        return

    def watch() -> None:
        try:  # debugpy's own pydevd (importable once debugpy runs in this process)
            from _pydevd_bundle.pydevd_constants import STATE_SUSPEND
            from _pydevd_bundle.pydevd_thread_lifecycle import resume_threads
        except ImportError:
            return
        while time.monotonic() < debugger.mpiworkbench_guard_until and not getattr(debugger, "is_started", False):
            if any(getattr(getattr(t, "additional_info", None), "pydev_state", None) == STATE_SUSPEND
                   for t in threading.enumerate() if t is not threading.current_thread()):
                resume_threads("*")
            time.sleep(LATE_STOP_EVERY_S)

    guard = threading.Thread(target=watch, name="mpiworkbench-late-stops", daemon=True)
    guard.pydev_do_not_trace = True  # (debugpy traces new threads; not this one)
    guard.is_pydev_daemon_thread = True
    debugger.mpiworkbench_guard = guard
    guard.start()


def recording_stops(publish: Callable[[dict], None]) -> Callable[[dict], None]:
    """The debugger's event callback *publish*, noting every stop and continue where the
    client can read it (:func:`mpiworkbench.trace.stops.record`: a stopped rank is not hung)."""

    def event_callback(event: dict) -> None:
        note_stop(event)
        publish(event)

    return event_callback


def note_stop(event: dict) -> None:
    """:func:`mpiworkbench.trace.stops.record`, never raising: the record must never break the
    debugger itself."""
    try:
        from mpiworkbench.trace import stops  # only once a debugger is attached

        stops.record(event)
    except Exception:  # noqa: BLE001
        pass
