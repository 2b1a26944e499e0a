"""A private single-node Slurm for the cluster tier: munged, slurmctld and slurmd from the
distribution's packages (Debian: ``slurm-wlm munge``), every file in a temp dir.

The ``slurm`` fixture starts it once per session and stops the three daemons by pid (never
by name) after checking that no job is left in ``squeue``. Client commands find it through
``SLURM_CONF`` in :attr:`Slurm.env`. Without the binaries the fixture skips (``make test``
installs them, so there the tests run); it also skips when not root, since ``SlurmUser=root``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.ports import free_ports

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sinfo", "squeue", "sbatch", "scancel")
#: Generous limits (seconds): conditions are polled, these only bound a failure.
START_LIMIT = 120
STOP_LIMIT = 60


def missing_binaries() -> list[str]:
    """Slurm and munge programs not found on PATH (``/usr/sbin`` included)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [name for name in DAEMONS + CLIENTS if shutil.which(name, path=path) is None]


def _which(name: str) -> str:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    found = shutil.which(name, path=path)
    assert found, f"{name} not found"
    return found


def _memory_mb() -> int:
    """A RealMemory the node surely has (Slurm drains a node reporting less than configured)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return max(1, int(line.split()[1]) // 1024 // 2)
    except OSError:
        pass
    return 1


def slurm_conf(what: str, root: Path, munge_socket: Path, controller: str, nodes: str, partition: str,
               per_node: str = "", extra: str = "") -> str:
    """``slurm.conf`` of a private Slurm of the test suite (every path under *root*): the
    *controller* and *nodes* lines given, the settings every such Slurm shares, and *partition*
    (its name and nodes) with a 30-minute limit. *per_node*: suffix of each slurmd's spool, pid
    and log files (``-%n`` when several slurmd share *root*); *extra*: more lines."""
    r = root
    return f"""\
# private {what} Slurm for the mpiworkbench test suite; every path below is temporary
ClusterName=mpiwb
{controller}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
{extra}StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool{per_node}
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd{per_node}.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd{per_node}.log
SlurmctldDebug=info
SlurmdDebug=info
ReturnToService=2
InactiveLimit=0
KillWait=30
MinJobAge=2
{nodes}
{partition} Default=YES MaxTime=30 State=UP OverSubscribe=YES
"""


def wait_until(condition: Callable[[], object], what: str, limit: float = START_LIMIT,
               interval: float = 0.1, diagnose: Callable[[], str] = lambda: "") -> object:
    """Poll *condition* until it returns something true; fail after *limit* seconds."""
    deadline = time.monotonic() + limit
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit:.0f} s waiting for {what}\n{diagnose()}")
        time.sleep(interval)


def processes_with_env(*entries: str) -> list[int]:
    """Live pids whose environment holds every ``NAME=value`` in *entries* (from /proc)."""
    wanted = [e.encode() for e in entries]
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and all(w in env for w in wanted):
            found.append(int(pid))
    return found


class Slurm:
    """One private Slurm cluster: one node (this host, ``CPUs=nproc``), one partition."""

    def __init__(self, root: Path):
        self.root = root
        self.node = socket.gethostname().split(".")[0]
        self.cpus = os.cpu_count() or 1
        self.partition = "mpiwb"
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        for var in [v for v in self.env if v.startswith(("SLURM_", "SBATCH_", "SRUN_", "SQUEUE_"))]:
            if var != "SLURM_CONF":  # nothing of an outer Slurm job may leak into ours
                del self.env[var]

    # -- client commands -------------------------------------------------------------------
    def run(self, *args: str, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster (stdout/stderr captured as text)."""
        kw.setdefault("env", self.env)
        return subprocess.run([_which(args[0]), *args[1:]], capture_output=True, text=True,
                              check=check, timeout=timeout, **kw)

    def jobs(self) -> list[str]:
        """Ids of the jobs ``squeue`` still lists (any state)."""
        out = self.run("squeue", "--noheader", "--states=all", "--format=%i %T").stdout
        return [line.split()[0] for line in out.splitlines()
                if line.split() and line.split()[1] not in ("COMPLETED", "CANCELLED", "FAILED",
                                                             "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                                                             "PREEMPTED", "BOOT_FAIL", "DEADLINE")]

    def node_state(self) -> str:
        result = self.run("sinfo", "--noheader", "--Node", "--format=%t", check=False)
        return result.stdout.strip() if result.returncode == 0 else ""

    def job_state(self, job: str) -> str:
        out = self.run("squeue", "--noheader", "--states=all", f"--jobs={job}", "--format=%T",
                       check=False).stdout.strip()
        return out or "GONE"

    def wait_for_no_jobs(self, limit: float = STOP_LIMIT) -> None:
        wait_until(lambda: not self.jobs(), "squeue to be empty", limit, diagnose=self.diagnose)

    def diagnose(self) -> str:
        """Log tails and queue, for failure messages."""
        parts = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            log = self.root / "log" / name
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-25:]
                parts.append(f"--- {name} (tail)\n" + "\n".join(tail))
        try:
            parts.append("--- squeue\n" + self.run("squeue", "--states=all", check=False, timeout=10).stdout)
        except (OSError, subprocess.SubprocessError):
            pass
        return "\n".join(parts)

    # -- daemons ---------------------------------------------------------------------------
    def _write_files(self) -> None:
        for sub in ("munge", "log", "state", "spool", "run"):
            (self.root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        r = self.root
        ctld_port, slurmd_port = free_ports(2)
        self.conf.write_text(slurm_conf(
            "single-node", r, self.munge_socket,
            f"SlurmctldHost={self.node}(127.0.0.1)\nSlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={_memory_mb()} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node}"))

    def _start(self, name: str, *args: str) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "ab")
        with log:
            self.procs[name] = subprocess.Popen([_which(name), *args], env=self.env, cwd=self.root,
                                                stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def _alive(self, name: str) -> bool:
        proc = self.procs.get(name)
        return proc is not None and proc.poll() is None

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}\n{self.diagnose()}")

    def start(self) -> "Slurm":
        self._write_files()
        r = self.root
        self._start("munged", "-F", "-f", f"--socket={self.munge_socket}",
                    f"--key-file={r}/munge/munge.key", f"--pid-file={r}/run/munged.pid",
                    f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/munged.seed")
        wait_until(lambda: self._check_alive() or self.munge_socket.exists(), "munged's socket",
                   diagnose=self.diagnose)
        self._start("slurmctld", "-D", "-c", "-f", str(self.conf))
        self._start("slurmd", "-D", "-N", self.node, "-f", str(self.conf))

        def idle():
            self._check_alive()
            return self.node_state() == "idle"

        wait_until(idle, f"sinfo to report node {self.node} idle", diagnose=self.diagnose)
        return self

    def stop(self) -> None:
        """Stop slurmd, slurmctld, munged (in that order) by pid: SIGTERM, then SIGKILL."""
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_LIMIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def cancel_all(self) -> list[str]:
        """Cancel every job still queued (there should be none); return their ids."""
        left = self.jobs()
        if left:
            self.run("scancel", *left, check=False)
            try:
                self.wait_for_no_jobs()
            except AssertionError:
                pass
        return left


_shared: Slurm | None = None
_users = 0


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """The session's private Slurm (started on first use; one instance even when several
    test modules import this fixture)."""
    global _shared, _users
    missing = missing_binaries()
    if missing:
        pytest.skip(f"Slurm/munge programs not installed ({', '.join(missing)}); `make test` installs "
                    "them, or: apt-get install slurm-wlm munge")
    if _shared is None:
        if os.geteuid() != 0:  # SlurmUser=root and slurmd must run as root
            pytest.skip("the private Slurm runs its daemons as root; not root here")
        # short path: munge's socket must fit in a sockaddr_un
        root = Path(tempfile.mkdtemp(prefix="mpiwb-slurm-"))
        cluster = Slurm(root)
        started = time.monotonic()
        try:
            cluster.start()
        except BaseException:
            cluster.stop()
            raise
        cluster.startup_seconds = time.monotonic() - started
        _shared = cluster
    _users += 1
    try:
        yield _shared
    finally:
        _users -= 1
        if _users == 0:
            cluster, _shared = _shared, None
            left = cluster.cancel_all()
            cluster.stop()
            if not left:
                shutil.rmtree(cluster.root, ignore_errors=True)
            assert not left, (f"jobs still in squeue when the tests ended (cancelled now): {left}; "
                              f"logs kept in {cluster.root}")
