"""Stop a workbench's cluster when the process that started it dies, however it dies.

ipyparallel stops a cluster at interpreter exit (``atexit``), which never runs when a
kernel is killed (SIGKILL, an out-of-memory kill, a crashed server): its controller and
MPI engines would run on for ever. Each :class:`~mpiworkbench.Workbench` therefore starts
this small process (:data:`WATCHDOG_CODE`) *before* it starts its cluster::

    python -m mpiworkbench.client.cluster.watchdog PARENT_PID PROFILE_DIR CLUSTER_ID

It sleeps until PARENT_PID exits, then ends every process of the cluster: each process of this
host whose environment says it belongs to that cluster (ipyparallel gives the controller and
every engine launcher ``IPP_PROFILE_DIR`` and ``IPP_CLUSTER_ID``, which ``mpiexec`` passes on
to its ranks) — so a kernel killed at any moment of a start, before the cluster file records
anything, leaves nothing, and a pid of the cluster file that another process got since is left
alone (:func:`members`; every signal goes to a process whose pid, start time and cluster match:
:func:`mpiworkbench.core.processes.send`). Then it removes what they leave: the world files of
the killed ranks in ``/dev/shm`` and their launchers' in the temporary directory
(:data:`mpiworkbench.core.shm.LAUNCHER_FILE_PREFIXES`), the cluster file, the controller's connection files, the
hub's engine state file (:func:`engine_state_file`) and the shared world's directory. Ranks that
died before it could stop them (a launcher ending a job kills its ranks at once) left their
footprints in the world's directory (:func:`~mpiworkbench.client.cluster.record.footprint_directory`):
what those name goes too.

A SIGTERM ends the cluster too, as the parent's death does: at a Slurm job's end (``scancel``, its
time limit) every process of the job gets one, and Slurm's ``SIGKILL`` follows only after its
``KillWait`` (30 s by default). The cluster's processes got one as well: the watchdog lets them end
by themselves first (:data:`JOB_END_WAIT_S`), then ends the rest and removes what is left. A workbench that stops normally ends its watchdog with ``SIGKILL``
first (:func:`stop_watchdog`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from mpiworkbench.client.cluster.record import footprint_directory, world_directory
from mpiworkbench.core import processes, shm

#: Scans for the cluster's processes at most (a controller being killed may have started a
#: child between two scans).
SCANS = 5
#: Seconds to wait for killed ranks to exit before their files in ``/dev/shm`` are removed.
EXIT_TIMEOUT_S = 10.0


#: What the watchdog runs: ``python -m mpiworkbench.client.cluster.watchdog``. The packages above
#: it import nothing until asked (their faces are lazy), so the watchdog loads only what it needs
#: (:mod:`~mpiworkbench.core.processes`, :mod:`~mpiworkbench.core.shm`, the world's record), not
#: the session and ipyparallel's client (0.2 s of CPU at every start, on the cores the engines
#: are starting on).
WATCHDOG_CODE = "import runpy; runpy.run_module('mpiworkbench.client.cluster.watchdog', run_name='__main__', alter_sys=True)"


def start_watchdog(profile_dir: str | os.PathLike, cluster_id: str) -> subprocess.Popen:
    """The watchdog of this process's cluster *cluster_id* of the profile in *profile_dir*, in a
    session of its own so a signal to the kernel's process group does not reach it. Start it
    before the cluster: it ends whatever of the cluster exists when this process dies."""
    return subprocess.Popen(
        [sys.executable, "-c", WATCHDOG_CODE, str(os.getpid()), str(profile_dir), str(cluster_id)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def stop_watchdog(watchdog: subprocess.Popen | None) -> None:
    """End a watchdog of :func:`start_watchdog` (its cluster is being stopped normally): with
    SIGKILL, as a SIGTERM would have it end the cluster (:func:`main`)."""
    if watchdog is not None and watchdog.poll() is None:
        watchdog.kill()
        watchdog.wait(timeout=10)


def engine_state_file(profile_dir: str | Path, cluster_id: str) -> Path:
    """The file ipyparallel's hub rewrites at every engine's (un)registration, for a controller
    restarted with ``--restore``: ``<profile>/log/engines<cluster_id>.json``. ipyparallel never
    removes it (its hub's cleanup method is never called), so every cluster of a new id left
    one in the profile; whoever stops a workbench's own cluster removes it."""
    return Path(profile_dir, "log", f"engines{cluster_id}.json")


def connection_file(profile_dir: str | Path, cluster_id: str, kind: str) -> Path:
    """The controller's connection file for *kind* (``client`` or ``engine``), named as
    ipyparallel's launchers name it: no id part for the empty cluster id."""
    prefix = f"ipcontroller-{cluster_id}" if cluster_id else "ipcontroller"
    return Path(profile_dir, "security", f"{prefix}-{kind}.json")


def cluster_files(profile_dir: str | Path, cluster_id: str) -> list[Path]:
    """The files a cluster of ipyparallel's keeps in its profile while it runs: its cluster
    file, the controller's connection files, the hub's engine state file."""
    return [Path(profile_dir, "security", f"cluster-{cluster_id}.json"),
            *(connection_file(profile_dir, cluster_id, kind) for kind in ("client", "engine")),
            engine_state_file(profile_dir, cluster_id)]


def belongs_to(profile_dir: str, cluster_id: str):
    """Whether process *pid* is one of the cluster's: its environment names the cluster (see
    the module's docstring)."""
    where = os.path.realpath(profile_dir)

    def belongs(pid: int) -> bool:
        env = processes.environ(pid)
        return (env.get("IPP_CLUSTER_ID") == cluster_id and "IPP_PROFILE_DIR" in env
                and os.path.realpath(env["IPP_PROFILE_DIR"]) == where)
    return belongs


def members(profile_dir: str, cluster_id: str) -> list[processes.Identity]:
    """The processes of this host that belong to the cluster now, and every process below them."""
    belongs = belongs_to(profile_dir, cluster_id)
    own = [who for who in map(processes.Identity.of, processes.pids()) if who is not None and belongs(who.pid)]
    return list(dict.fromkeys(processes.tree(own)))


def freeze(profile_dir: str, cluster_id: str) -> list[processes.Identity]:
    """Stop (SIGSTOP) every process of the cluster on this host, rescanning until a scan finds
    none that is not stopped yet (a stopped process starts no child); the processes stopped.

    A rank starting its MPI world creates the shared-memory segment of its host and, only then,
    records its footprint: a rank that ran on between its footprint's reading and its end could
    leave a segment nobody recorded. Stopped first, every file it has is in the footprint."""
    frozen: dict[int, processes.Identity] = {}
    for _scan in range(SCANS):
        new = [who for who in members(profile_dir, cluster_id)
               if who.pid != os.getpid() and who.pid not in frozen]
        if not new:
            break
        for who in new:
            if processes.send(who, signal.SIGSTOP):
                frozen[who.pid] = who
    return list(frozen.values())


def end_cluster(profile_dir: str, cluster_id: str) -> None:
    """End every process of the cluster on this host, then remove what they left (see the module)."""
    footprints = footprint_directory(profile_dir, cluster_id)
    killed: list[dict] = shm.read_footprints(str(footprints)) if footprints.is_dir() else []
    for _scan in range(SCANS):
        found = freeze(profile_dir, cluster_id)
        if not found:
            break
        killed += [{**shm.footprint(who.pid), "launcher_files": shm.launcher_files(who.pid)} for who in found]
        processes.end(found)
    shm.remove_after_exit(killed, EXIT_TIMEOUT_S)
    for path in cluster_files(profile_dir, cluster_id):
        with contextlib.suppress(OSError):
            path.unlink()
    shutil.rmtree(world_directory(profile_dir, cluster_id), ignore_errors=True)


#: Seconds the watchdog, sent SIGTERM, lets the cluster's processes of this host end by
#: themselves (they got one too) before it ends the rest: a launcher stopped mid-way would kill the
#: ranks of other hosts, whose files nobody there could remove (Slurm's ``KillWait`` is 30 s).
JOB_END_WAIT_S = 10.0


def wait_for_members_to_end(profile_dir: str, cluster_id: str, limit_s: float, poll_s: float = 0.2) -> bool:
    """Wait up to *limit_s* seconds until no process of this host belongs to the cluster; whether none does."""
    deadline = time.monotonic() + limit_s
    while [who for who in members(profile_dir, cluster_id) if who.pid != os.getpid()]:
        if time.monotonic() > deadline:
            return False
        time.sleep(poll_s)
    return True


class _Ended(Exception):
    """A SIGTERM came while the watchdog waited: end the cluster now."""


_waiting = True


def _end_now(signum, frame) -> None:
    if _waiting:  # once the cluster is being ended, nothing interrupts that
        raise _Ended


def main(argv: list[str] | None = None) -> int:
    global _waiting
    argv = sys.argv[1:] if argv is None else argv
    parent, profile_dir, cluster_id = int(argv[0]), str(argv[1]), str(argv[2])
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C in the terminal is the parent's business
    signal.signal(signal.SIGTERM, _end_now)  # the job ends: so does the cluster, not the watchdog alone
    try:
        if os.getppid() == parent:  # else it died before we could watch it
            processes.wait_for_exit(parent)
        _waiting = False
    except _Ended:
        _waiting = False
        wait_for_members_to_end(profile_dir, cluster_id, JOB_END_WAIT_S)
    end_cluster(profile_dir, cluster_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
