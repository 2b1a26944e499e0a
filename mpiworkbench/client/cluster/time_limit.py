"""A notebook's world inside a Slurm job stops before the job's time limit, with a message.

At its time limit Slurm kills the job: the JupyterLab server that runs as that job, its kernels
and every rank, mid-call. A cell still running then never ends, and the tab shows only that the
server went away. So a world started by a kernel inside a job (:mod:`~mpiworkbench.client.cluster.allocation`)
is watched: :data:`MARGIN_S` seconds before the job's end (``squeue``'s time left, asked again
when the moment comes, so an extended limit is followed), the cell that runs is interrupted by
:class:`JobTimeLimit`, the world is stopped, and the notebook shows, instead of a traceback,
the one-line error::

    JobTimeLimit: your Slurm job 42 reaches its time limit (2:00) in 58 s: the MPI world was
    stopped; save your notebook now and start a new server from the hub for more time

When no cell runs at that moment the world is stopped all the same, and each cell run later in
that job starts with the message (on stderr); a world started after that moment is stopped at once
with the error. The interruption is a ``SIGALRM`` timer of the
kernel's main thread (where cells run): a blocking wait in a cell — ``%%px``, ``wb.run``,
``time.sleep`` — is interrupted like Ctrl-C would; a kernel whose code uses ``SIGALRM`` itself
is not watched. Only IPython kernels are watched (a script under ``sbatch`` ends with its job).
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.client.cluster.allocation import Allocation

__all__ = ["MARGIN_S", "JobTimeLimit", "JobClock", "parse_duration", "watch", "unwatch"]

#: Seconds before the job's time limit at which its worlds are stopped: enough to stop them and
#: to show the message before Slurm's ``SIGTERM`` (sent at the limit, up to half a minute late).
MARGIN_S = 60.0
#: Bound on one ``squeue`` call.
SQUEUE_TIMEOUT_S = 30.0


class JobTimeLimit(BaseException):
    """The Slurm job is about to reach its time limit: the running cell was interrupted and the
    world stopped. A ``BaseException`` (as ``KeyboardInterrupt``), so no ``except Exception``
    of the interrupted code swallows it."""


def parse_duration(text: str) -> float | None:
    """Slurm's ``[D-]HH:MM:SS`` / ``MM:SS`` (``squeue %L``, ``%l``) in seconds; ``None`` for
    ``UNLIMITED``, ``NOT_SET``, ``INVALID`` or anything else unreadable."""
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return float(((days * 24 + hours) * 60 + minutes) * 60 + seconds)


@dataclass
class JobClock:
    """What ``squeue`` says of *job*: ``left`` seconds until its time limit (at monotonic
    ``asked``), its ``limit`` as Slurm writes it."""

    job: str
    left: float
    limit: str
    asked: float

    @classmethod
    def read(cls, job: str) -> "JobClock | None":
        """Ask ``squeue`` (``None``: no time limit, or Slurm's commands do not answer)."""
        try:
            done = subprocess.run(["squeue", "--noheader", "--jobs", job, "--format=%L %l"], capture_output=True,
                                  text=True, timeout=SQUEUE_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        fields = done.stdout.split()
        if done.returncode != 0 or len(fields) != 2:
            return None
        left = parse_duration(fields[0])
        return None if left is None else cls(job, left, fields[1], time.monotonic())

    def remaining(self) -> float:
        return self.left - (time.monotonic() - self.asked)

    def message(self) -> str:
        return (f"your Slurm job {self.job} reaches its time limit ({self.limit}) in {max(0, self.remaining()):.0f} s: "
                "the MPI world was stopped; save your notebook now and start a new server from the hub for more time")


class _Watch:
    """The kernel's one timer: the sessions it stops, the job's clock, whether a cell runs."""

    def __init__(self, shell: Any, job: str, clock: JobClock):
        self.shell, self.job, self.clock = shell, job, clock
        self.sessions: weakref.WeakSet = weakref.WeakSet()
        self.running_cell = False
        self.ended: str | None = None  # the message, once the worlds were stopped for the job's end

    # -- IPython's events and handlers --------------------------------------------------------
    def install(self) -> None:
        signal.signal(signal.SIGALRM, self._fire)
        self.shell.events.register("pre_run_cell", self._pre_run_cell)
        self.shell.events.register("post_run_cell", self._post_run_cell)
        if not self.shell.custom_exceptions:  # our one-line error instead of a traceback
            self.shell.set_custom_exc((JobTimeLimit,), _show)

    def _pre_run_cell(self, *_args) -> None:
        self.running_cell = True
        if self.ended:
            print(f"JobTimeLimit: {self.clock.message()}", file=sys.stderr)

    def _post_run_cell(self, *_args) -> None:
        self.running_cell = False
        if self.ended:  # the interrupted cell's world, if the custom handler could not stop it
            self.stop_sessions()

    # -- the timer ----------------------------------------------------------------------------
    def arm(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(0.001, self.clock.remaining() - MARGIN_S))

    def _fire(self, _signum, frame) -> None:
        if not self.sessions or self.ended:
            return
        clock = JobClock.read(self.job)
        if clock is not None and clock.left > MARGIN_S + 1:  # the limit was extended
            self.clock = clock
            self.arm()
            return
        self.ended = self.clock.message()
        if self.running_cell and not _in_event_loop(frame):  # raised into the cell's code, never the loop
            raise JobTimeLimit(self.ended)
        self.stop_sessions()

    def stop_sessions(self) -> None:
        for session in list(self.sessions):
            with contextlib.suppress(Exception):
                session.stop()
        self.sessions.clear()


def _in_event_loop(frame: Any) -> bool:
    """Whether the main thread was interrupted in the kernel's event loop itself (between a
    cell's steps), where an exception would end the loop, not the cell."""
    return frame is None or frame.f_code.co_filename.endswith(("selectors.py", "base_events.py"))


def _show(shell, etype, value, tb, tb_offset=None) -> list[str]:
    """IPython's handler of :class:`JobTimeLimit`: stop the worlds, then show the message
    alone (the frames the timer interrupted say nothing to a student)."""
    if _WATCH is not None:
        _WATCH.stop_sessions()
    stb = [f"{etype.__name__}: {value}"]
    upstream.show_traceback(shell, etype, value, stb)
    return stb


_WATCH: _Watch | None = None


def watch(session: Any, allocation: Allocation | None) -> bool:
    """Stop *session*'s world before *allocation*'s job reaches its time limit (see the module);
    whether it is watched: only inside a job with a time limit, in an IPython kernel's main
    thread, where nothing else uses ``SIGALRM``."""
    global _WATCH
    if allocation is None or threading.current_thread() is not threading.main_thread():
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    if _WATCH is None or _WATCH.job != allocation.job:
        if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, None):
            return False
        clock = JobClock.read(allocation.job)
        if clock is None:
            return False
        _WATCH = _Watch(shell, allocation.job, clock)
        _WATCH.install()
    _WATCH.sessions.add(session)
    if _WATCH.ended:  # a new world in a job about to end: stopped at once, with the message
        raise JobTimeLimit(_WATCH.ended)
    _WATCH.arm()
    return True


def unwatch(session: Any) -> None:
    """*session* stopped: no longer watched (the timer stays armed for the others)."""
    if _WATCH is not None:
        _WATCH.sessions.discard(session)
        if not _WATCH.sessions and not _WATCH.ended:
            signal.setitimer(signal.ITIMER_REAL, 0)
