"""A rank's debugpy between debugging sessions, on the engine (what
:func:`~mpiworkbench.client.cluster.engine_start.debuggable` adds to the engine's kernel).

ipykernel starts debugpy in the rank's process at the first ``debug_request``, and debugpy, once
started, stays: its tracing of every Python line and call goes on after the client has detached
(debugpy's own issue 1655: "once you start debugpy in a process, the process is forever slow
thereafter"). Measured on this project's engines, after one ``wb.debug()`` session the ranks ran
a pure-Python loop 2.2 times slower and imported the backends (``registry.availability()``) 17
times slower, 55 s instead of 3.2, until the world restarted. Here:

* :func:`listen`: debugpy started on a port it binds itself (ipykernel's own start binds a free
  port, lets it go, then asks debugpy to listen on it, and another process can take it in between:
  ipykernel's open issue 988, "ipykernel can start debugpy on an occupied port", seen in VS Code's
  CI; the likely cause of an ``initialize`` that failed, saying nothing more, on one rank of three
  in this project's CI); when debugpy cannot start, the reply now says why;
* :func:`match_tracing`: each request the rank's main thread takes up (a cell, a function) runs
  traced only while a client has the rank's debugger started (debugpy's public
  ``trace_this_thread``); a session that starts later traces its requests again;
* :func:`let_go_of_late_stops`: after a ``disconnect``, a stop no client will continue is let go;
* :func:`recording_stops`: every stop and continue noted where the notebook reads it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.core.threads import start_daemon

#: Whether this process's main thread was last set traced by :func:`match_tracing` (debugpy traces
#: every thread once started).
_traced = [True]


def listen(debugger: Any) -> str | None:
    """Start debugpy in the rank for its *debugger* (ipykernel's), unless started already: as
    ipykernel's own start does (an ``execute_request`` over the debugger's shell socket, run by the
    rank's main thread), but on a port debugpy's adapter binds itself, read back from the reply.
    Return ``None`` once debugpy listens, else what went wrong (the exception on the rank)."""
    if debugger is None or getattr(debugger, "debugpy_initialized", True):
        return None
    import zmq
    from ipykernel.compiler import get_tmp_directory

    Path(get_tmp_directory()).mkdir(mode=0o700, parents=True, exist_ok=True)  # (ipykernel's start makes it)
    client, shell = debugger.debugpy_client, debugger.shell_socket
    port = f"__import__('debugpy').listen(({client.debugpy_host!r}, 0))[1]"
    debugger.session.send(shell, "execute_request", {"code": "", "silent": True, "user_expressions": {"port": port}},
                          None, shell.getsockopt(zmq.ROUTING_ID))
    _ident, msg = debugger.session.recv(shell, mode=0)
    content = msg["content"]
    found = (content.get("user_expressions") or {}).get("port") or {}
    if content.get("status") == "ok" and found.get("status") == "ok":
        client.debugpy_port = str(int(found["data"]["text/plain"]))
        debugger.debugpy_initialized = True
        return None
    error = found if found.get("status") == "error" else content
    return f"{error.get('ename', 'no answer')}: {error.get('evalue', content)}"


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

    debugger.mpiworkbench_guard = start_daemon(watch, "mpiworkbench-late-stops")


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
