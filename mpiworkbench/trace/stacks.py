"""A rank's Python stack, read from outside it or from another of its threads, and the user's
line in it.

:func:`python_stack` asks a rank armed by :func:`mpiworkbench.trace.hang.arm` for every thread's
stack: it sends ``SIGUSR2``, and :mod:`faulthandler` writes the stacks into the rank's
``/dev/shm/mpiworkbench-<pid>.stack`` from its signal handler (which runs even while the rank
sits in an MPI call). faulthandler writes line by line, the threads newest first and the main
thread last, each innermost frame first; on a loaded machine the rank may wait for a core between
two lines. So the file begins with a line :func:`open_for_dumps` wrote at arming: the main
thread's outermost frame, which stays the same while the process lives. A dump is whole once it
ends with that frame; the reader waits for it, not for a pause in the writing.
No MPI, no ipyparallel here.
"""

from __future__ import annotations

import os
import re
import signal
import time
from typing import IO

from mpiworkbench.core import processes

STACK_SIGNAL = signal.SIGUSR2
#: The stack file's first line, before the main thread's outermost frame.
HEADER = "# the main thread's outermost frame:"
#: Seconds the dump of a process armed without a header may stay unchanged before it is taken
#: as whole.
STILL_S = 1.0
#: The line :func:`python_stack` ends a dump with that was not whole by its time-out.
CUT = "  ... (cut short: the rank wrote no more in time)"

_FRAME = re.compile(r'\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)')
_LIBRARY = ("site-packages", "/lib/python3", "<frozen")
#: The workbench's own frames never the user's line (an editable install too): tracer, engine loop,
#: the engine's threads beside the debugger (its late-stop guard).
_OWN_RUNTIME = ("mpiworkbench/trace", "mpiworkbench/client/cluster/engine_start.py",
                "mpiworkbench/client/cluster/rank_debugpy.py")


def stack_path(pid: int) -> str:
    return f"/dev/shm/mpiworkbench-{pid}.stack"


def open_for_dumps(pid: int) -> IO[str]:
    """Open process *pid*'s (this process's) stack file for faulthandler's dumps, its first line
    the :data:`HEADER` and the main thread's outermost frame (call it from any thread)."""
    stream = open(stack_path(pid), "a")  # append: a reader cuts the file back to its header
    outermost = main_stack()[-1:]
    if outermost and stream.tell() == 0:
        stream.write(f"{HEADER}{outermost[0]}\n")
        stream.flush()  # faulthandler writes to the file descriptor, past Python's buffer
    return stream


def main_stack() -> list[str]:
    """The main thread's Python stack, most recent call first, in :mod:`faulthandler`'s format
    (what :func:`user_line` reads), read from another thread of this process."""
    import sys
    import threading
    import traceback

    frame = sys._current_frames().get(threading.main_thread().ident)
    if frame is None:
        return []
    lines = [f"Current thread 0x{threading.main_thread().ident:016x} (most recent call first):"]
    lines += [f'  File "{f.filename}", line {f.lineno} in {f.name}' for f in reversed(traceback.extract_stack(frame))]
    return lines


def stack_whole(stack: list[str]) -> bool:
    """Whether *stack* (from :func:`python_stack` or :func:`main_stack`) was read whole: not
    empty, not cut short.

    Examples
    --------
    >>> stack_whole(['Current thread 0x1 (most recent call first):', '  File "<string>", line 1 in <module>'])
    True
    >>> stack_whole(['Current thread 0x1 (most recent call first):', CUT])
    False
    """
    return bool(stack) and stack[-1] != CUT


def python_stack(pid: int, timeout: float = 5.0, started: int | None = None) -> list[str]:
    """Every thread's Python stack of *pid* (armed with :func:`mpiworkbench.trace.hang.arm`), most
    recent call first; ``[]`` when it cannot be had (not armed, gone, another host). Waits up to
    *timeout* seconds for the whole dump; what was written by then otherwise, ended by :data:`CUT`.

    *started*: the rank's start time as its footprint recorded it
    (:func:`mpiworkbench.core.shm.started`); the signal goes only to that very process (through
    :func:`mpiworkbench.core.processes.send`): a rank that died and left its stack file gives its
    pid to the next process started, which ``SIGUSR2`` would end (its default action). ``None``:
    whichever process has *pid* now."""
    who = processes.Identity.of(pid) if started is None else processes.Identity(pid, started)
    path = stack_path(pid)
    try:
        with open(path) as f:
            first = f.readline()
        header = first if first.startswith(HEADER) and first.endswith("\n") else ""
        os.truncate(path, len(header.encode()))
        if who is None or not processes.send(who, STACK_SIGNAL):
            return []
    except OSError:
        return []
    end = header[len(HEADER):]  # the main thread's outermost frame, and its newline
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while True:
        with open(path) as f:
            text = f.read()[len(header):]
        if end and text.endswith(end):
            return text.splitlines()
        if text != last:
            last, since = text, time.monotonic()
        elif not end and text and time.monotonic() - since >= STILL_S:
            return text.splitlines()
        if time.monotonic() > deadline:
            return text.splitlines() + [CUT] if text else []
        time.sleep(0.02)


def user_line(stack: list[str]) -> str | None:
    """The innermost frame of the stack that is the user's code (not a library's), as
    ``file:line in func``; the signalled ("Current") thread is searched first."""
    blocks: list[list[str]] = []
    for line in stack:
        if line.startswith(("Thread", "Current thread")):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    blocks.sort(key=lambda b: not b[0].startswith("Current thread"))
    for block in blocks:
        frames = block[1:]
        for at, line in enumerate(frames):
            m = _FRAME.match(line)
            outermost_c = m and m["file"] == "<string>" and at == len(frames) - 1  # ``python -c``: the engine's start
            if m and not outermost_c and not any(part in m["file"] for part in _LIBRARY + _OWN_RUNTIME):
                return f"{m['file']}:{m['line']} in {m['func'].strip()}"
    return None
