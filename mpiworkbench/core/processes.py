"""Processes of this host read from ``/proc`` (Linux): their trees, who they are, and signals
that reach only the process meant.

A pid alone does not name a process: once it has exited, the kernel hands its pid to the next
process started (another notebook's ``mpiexec``, say). Everything here that signals a process
therefore takes an :class:`Identity` — the pid and the process's start time — and signals
through a pidfd opened before the start time is compared, so the process checked is the
process signalled. A process whose identity no longer matches is left alone.

Used by the CLI's job runner (:mod:`mpiworkbench.core.launch`), the watchdog that stops a
workbench's cluster when its kernel dies, what removes the files of dead ranks, and the tests
that check nothing is left running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple

from mpiworkbench.core.shm import started


class Identity(NamedTuple):
    """One process of this host: its pid and when it started (clock ticks since boot)."""

    pid: int
    started: int

    @classmethod
    def of(cls, pid: int) -> "Identity | None":
        """The identity of the live process *pid* now (``None``: gone, or a zombie)."""
        when = started(pid)
        return None if when is None else cls(int(pid), when)

    def alive(self) -> bool:
        """Whether this very process still runs (not another one that got its pid)."""
        return started(self.pid) == self.started


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below *pid* (children, grandchildren, …)."""
    children = _children_map()
    found, stack = [], list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def family(pid: int) -> list[int]:
    """*pid* and every process below it now (one scan of ``/proc``): say a controller and its
    schedulers, found once for :func:`cpu_seconds` to read many times."""
    return [pid, *descendants(pid)]


def cpu_seconds(pids: Iterable[int]) -> float:
    """The CPU seconds (user and system) that the processes *pids* have used so far (one that
    has exited counts nothing); for a process and its children, :func:`family`."""
    total = 0
    for each in pids:
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (stat fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def tree(roots: Iterable[Identity]) -> list[Identity]:
    """The *roots* that still run and every process below them, as identities (taken now: once
    a parent dies its children are re-parented and could no longer be found from it)."""
    found: list[Identity] = []
    for root in roots:
        if root.alive():
            found += [root, *filter(None, map(Identity.of, descendants(root.pid)))]
    return found


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def environ(pid: int) -> dict[str, str]:
    """The environment process *pid* started with (``{}`` when it cannot be read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def alive(pid: int) -> bool:
    """Whether *pid* exists and is not a zombie."""
    return started(pid) is not None


def pids() -> Iterator[int]:
    """Every process of this host now."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name)


@contextlib.contextmanager
def _held(pid: int) -> Iterator[int | None]:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # gone (or no pidfds on this system)
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def send(who: Identity, sig: int, belongs: Callable[[int], bool] | None = None) -> bool:
    """Send *sig* to the process *who*, only if it is still that process (pid and start time)
    and, with *belongs*, ``belongs(pid)`` holds for it; whether it was sent."""
    with _held(who.pid) as fd:
        if not who.alive() or (belongs is not None and not belongs(who.pid)):
            return False
        try:
            if fd is not None:
                signal.pidfd_send_signal(fd, sig)
            else:
                os.kill(who.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
    return True


def end(processes: Iterable[Identity], grace: float = 3.0, belongs: Callable[[int], bool] | None = None) -> None:
    """SIGTERM *processes* (identities: see :func:`send`; a stopped one is continued so that it
    acts on it), then SIGKILL whichever of them still runs after *grace* seconds."""
    processes = list(processes)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for who in processes:
            if send(who, sig, belongs) and sig == signal.SIGTERM:
                send(who, signal.SIGCONT, belongs)  # a stopped process acts on SIGTERM once continued
        deadline = time.monotonic() + grace
        while any(who.alive() for who in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(who.alive() for who in processes):
            return


def wait_for_exit(pid: int) -> None:
    """Block until process *pid* exits (pidfd where available, else polling)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while alive(pid):
            time.sleep(0.5)
        return
    try:
        import select

        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll()
    finally:
        os.close(fd)
