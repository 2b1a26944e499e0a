"""Stop a workbench's cluster when the process that started it dies, however it dies.

ipyparallel stops a cluster at interpreter exit (``atexit``), which never runs when a
kernel is killed (SIGKILL, an out-of-memory kill, a crashed server): its controller and
MPI engines would run on for ever. Each :class:`~mpiworkbench.Workbench` therefore starts
this small process (:data:`WATCHDOG_CODE`)::

    python -m mpiworkbench.client.watchdog PARENT_PID CLUSTER_FILE

It sleeps until PARENT_PID exits, then ends the controller and engine sets recorded in
ipyparallel's cluster file (kept current across restarts) and removes the file (and the
hub's engine state file, :func:`engine_state_file`). A
workbench that stops normally terminates its watchdog first.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mpiworkbench.client.processes import end_trees, wait_for_exit


#: What the watchdog runs: ``python -m mpiworkbench.client.watchdog``, with the packages
#: ``mpiworkbench`` and ``mpiworkbench.client`` entered as bare namespaces, so that their
#: ``__init__`` (the session, ipyparallel's client: 0.2 s of CPU, at every start, on the cores
#: the engines are starting on) does not run; this module needs only :mod:`.processes`.
WATCHDOG_CODE = (
    "import importlib.util, runpy, sys, types\n"
    "for name in ('mpiworkbench', 'mpiworkbench.client'):\n"
    "    spec = importlib.util.find_spec(name)\n"
    "    package = types.ModuleType(name)\n"
    "    package.__spec__, package.__file__ = spec, spec.origin\n"
    "    package.__path__ = list(spec.submodule_search_locations)\n"
    "    sys.modules[name] = package\n"
    "runpy.run_module('mpiworkbench.client.watchdog', run_name='__main__', alter_sys=True)\n"
)


def start_watchdog(cluster_file: str) -> subprocess.Popen:
    """The watchdog of this process's cluster (recorded in *cluster_file*), in a session of
    its own so a signal to the kernel's process group does not reach it."""
    return subprocess.Popen(
        [sys.executable, "-c", WATCHDOG_CODE, str(os.getpid()), str(cluster_file)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_watchdog(watchdog: subprocess.Popen | None) -> None:
    """End a watchdog of :func:`start_watchdog` (its cluster is being stopped normally)."""
    if watchdog is not None and watchdog.poll() is None:
        watchdog.terminate()
        watchdog.wait(timeout=10)


def engine_state_file(profile_dir: str | Path, cluster_id: str) -> Path:
    """The file ipyparallel's hub rewrites at every engine's (un)registration, for a controller
    restarted with ``--restore``: ``<profile>/log/engines<cluster_id>.json``. ipyparallel never
    removes it (its hub's cleanup method is never called), so every cluster of a new id left
    one in the profile; whoever stops a workbench's own cluster removes it."""
    return Path(profile_dir, "log", f"engines{cluster_id}.json")


def read_cluster_file(cluster_file: Path) -> dict:
    """An ipyparallel cluster file's contents (``{}`` when it is gone)."""
    for _attempt in range(50):  # ipyparallel may be rewriting the file this very moment
        try:
            return json.loads(cluster_file.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            time.sleep(0.1)
    return {}


def cluster_pids(data: dict) -> list[int]:
    """Controller and ``mpiexec`` pids recorded in an ipyparallel cluster file's *data*."""
    pids = []
    for engine_set in (data.get("engines") or {}).get("sets", {}).values():
        if engine_set.get("pid"):
            pids.append(int(engine_set["pid"]))
    controller = (data.get("controller") or {}).get("state") or {}
    if controller.get("pid"):
        pids.append(int(controller["pid"]))
    return pids


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parent, cluster_file = int(argv[0]), Path(argv[1])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C in the terminal is the parent's business
    wait_for_exit(parent)
    data = read_cluster_file(cluster_file)
    end_trees(cluster_pids(data))  # engines first (listed first), then the controller
    cluster = data.get("cluster") or {}
    leftovers = [cluster_file]
    if cluster.get("profile_dir") and cluster.get("cluster_id"):
        leftovers.append(engine_state_file(cluster["profile_dir"], cluster["cluster_id"]))
    for path in leftovers:
        with contextlib.suppress(OSError):
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
