"""Find processes a test run left behind: descendants of a pid, read from /proc."""

from __future__ import annotations

import os
from pathlib import Path

#: Command-line fragments of the processes a cluster or a lab server consists of.
CLUSTER_PARTS = ("ipengine", "ipcontroller", "ipyparallel.engine", "ipyparallel.controller",
                 "ipyparallel.cluster", "mpiexec", "hydra_pmi_proxy", "jupyter", "jupyterlab",
                 "ipykernel", "chromium", "chrome")


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


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def descendants(pid: int | None = None) -> list[int]:
    pid = os.getpid() if pid is None else pid
    children = _children_map()
    found, stack = [], list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(children.get(child, []))
    return found


def leftover_cluster_processes(pid: int | None = None) -> list[str]:
    """Descendants of *pid* that look like engines, controllers, mpiexec, servers or browsers."""
    leftovers = []
    for child in descendants(pid):
        line = cmdline(child)
        if line and any(part in line for part in CLUSTER_PARTS):
            try:
                state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":  # a zombie is already dead, waiting to be reaped
                leftovers.append(f"{child}: {line}")
    return leftovers
