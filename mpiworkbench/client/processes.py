"""Process trees read from ``/proc`` (Linux): find a cluster's processes and end them.

Used by the watchdog that stops a workbench's cluster when its kernel dies, and by the
tests that check nothing is left running.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


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


def cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def alive(pid: int) -> bool:
    """Whether *pid* exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def end_trees(roots: list[int], grace: float = 3.0) -> None:
    """SIGTERM *roots* and all their descendants, then SIGKILL whatever outlives *grace*.

    The whole tree is collected first: once a parent dies its children are re-parented
    and could no longer be found from it.
    """
    pids: list[int] = []
    for root in roots:
        if alive(root):
            pids += [root, *descendants(root)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not any(alive(p) for p in pids):
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
