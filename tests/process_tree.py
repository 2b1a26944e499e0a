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


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _decode_address(hex_addr: str) -> str:
    host, port = hex_addr.split(":")
    if len(host) == 8:  # IPv4, little-endian
        octets = [str(int(host[i : i + 2], 16)) for i in range(6, -1, -2)]
        return f"{'.'.join(octets)}:{int(port, 16)}"
    return f"[{host}]:{int(port, 16)}"  # IPv6: raw hex is enough to tell loopback from any


def listening_addresses(pids: list[int]) -> list[str]:
    """Local addresses on which any of *pids* listens for TCP connections."""
    inodes = set().union(*(_socket_inodes(p) for p in pids)) if pids else set()
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                found.append(_decode_address(fields[1]))
    return found
