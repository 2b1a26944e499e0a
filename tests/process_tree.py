"""Find processes a test run left behind (descendants of a pid, read from /proc), and the files
ended MPI worlds left in /dev/shm."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from mpiworkbench.client.cluster import controller
from mpiworkbench.core import shm
from mpiworkbench.core.processes import alive, cmdline, descendants as _descendants


def descendants(pid: int | None = None) -> list[int]:
    return _descendants(os.getpid() if pid is None else pid)


#: Command-line fragments of the processes a cluster or a lab server consists of.
CLUSTER_PARTS = ("ipengine", "ipcontroller", "ipyparallel.engine", "ipyparallel.controller", controller.FILE,
                 "ipyparallel.cluster", "mpiexec", "hydra_pmi_proxy", "jupyter", "jupyterlab",
                 "ipykernel", "chromium", "chrome")


def _marked(pid: int, marker: str) -> bool:
    """Whether *marker* (``NAME=value``) is one of *pid*'s environment variables."""
    try:
        return b"\0" + marker.encode() + b"\0" in b"\0" + Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def leftover_cluster_processes(exclude: tuple[int, ...] = ()) -> list[str]:
    """Live processes this test run started that look like clusters, servers or browsers.

    "Started by this run" means: the ``MPIWORKBENCH_TEST_RUN`` marker (set in
    ``tests/conftest.py``) is in its environment; in a pytest-xdist worker, the worker's own
    marker (``MPIWORKBENCH_TEST_WORKER``), so that the other worker's clusters do not count.
    Orphans re-parented to init are found too, which a walk down from the test process would miss.
    """
    name = "MPIWORKBENCH_TEST_WORKER" if os.environ.get("MPIWORKBENCH_TEST_WORKER") else "MPIWORKBENCH_TEST_RUN"
    marker = f"{name}={os.environ[name]}"
    leftovers = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in (os.getpid(), *exclude):
            continue
        pid = int(entry.name)
        line = cmdline(pid)
        if line and any(part in line for part in CLUSTER_PARTS) and alive(pid) and _marked(pid, marker):
            leftovers.append(f"{pid}: {line}")
    return leftovers


def world_files() -> set[str]:
    """The MPI worlds' files in ``/dev/shm`` now: MPICH's segments (``mpich_shm_*``) and the
    interposer's (``mpiworkbench-*``), by path."""
    try:
        names = os.listdir(shm.SHM_DIR)
    except OSError:
        return set()
    return {path for path in (os.path.join(shm.SHM_DIR, name) for name in names) if shm.is_world_file(path)}


#: How long a world file nobody holds may stay before it counts as left behind (seconds): the
#: processes that remove a world's files (its launcher, the workbench after a restart) do so
#: right after the world ends, and the tiers run tests side by side, so another test's world may
#: have just ended when a check looks.
SETTLE_S = 30.0


def settled(found: Callable[[], list[str]], settle: float = SETTLE_S) -> list[str]:
    """What *found* still lists after at most *settle* seconds (polled: an empty list comes at
    once): for files whose owners remove them right after their processes end."""
    deadline = time.monotonic() + settle
    while True:
        left = found()
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.5)  # polling a condition (the files removed by their owners), bounded above


def _of_live_processes(paths: set[str]) -> set[str]:
    """Those of *paths* the interposer named after a process that still runs (``mpiworkbench-<pid>.*``,
    such as a rank's record of a debugger's stop, written and closed): ranks of another lane's world."""
    mine = set()
    for path in paths:
        name = os.path.basename(path)
        pid = name[len("mpiworkbench-"):].split(".", 1)[0]
        if name.startswith("mpiworkbench-") and pid.isdigit() and shm.started(int(pid)) is not None:
            mine.add(path)
    return mine


def leftover_world_files(at_start: set[str], settle: float = SETTLE_S) -> list[str]:
    """World files in ``/dev/shm`` that were not there *at_start* (:func:`world_files` when the
    test session began) that no live process maps, holds open or is named in, still there after *settle*
    seconds (polled: an empty answer comes at once): left behind by processes that have ended
    — this run's, or those of any other MPI job on the machine meanwhile (a file does not say
    who made it: the message gives each one's size and when it was last written)."""
    def unheld() -> list[str]:
        new = world_files() - at_start
        return sorted(new - shm.in_use(new) - _of_live_processes(new))

    left = []
    for path in settled(unheld, settle):
        try:
            st = os.stat(path)
        except OSError:
            continue  # removed meanwhile
        written = time.strftime("%H:%M:%S", time.localtime(st.st_mtime))
        left.append(f"{path} ({st.st_size} bytes, last written {written})")
    return left


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
