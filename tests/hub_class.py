"""A class on the simulated cluster (``tests/multinode.py``): the course's accounts inside the
nodes' namespaces only, and ``mpiworkbench hub`` started on the head node. Used by the cluster
tier's ``test_hub.py`` and the browser tier's ``test_hub_class.py``."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpiworkbench.core.shm import WORLD_FILE_PREFIXES
from tests.cluster.slurm import processes_with_env, wait_until
from tests.ports import free_port

#: Generous bound (seconds) on the hub's start, a server's start, a world's start.
LIMIT = 180
PYTHON = sys.executable
#: The course's accounts (uids far above the machine's own).
STUDENTS = ("student1", "student2", "student3")
TEACHER = "teacher1"
FIRST_UID = 47101


class Accounts:
    """The course's accounts inside the simulated nodes' mount namespaces only: the machine's
    ``passwd``, ``group`` and ``shadow`` plus the course's, bind-mounted over ``/etc`` in every
    node's namespace; homes in a directory of the test's."""

    def __init__(self, nodes, names: list[str]):
        self.root = Path(tempfile.mkdtemp(prefix="mpiwb-class-"))
        self.passwords = {name: secrets.token_urlsafe(12) for name in names}
        self.uids = {name: FIRST_UID + i for i, name in enumerate(names)}
        try:
            self._make(nodes)
        except BaseException:  # nobody gets these accounts to remove them
            self.remove()
            raise

    def _make(self, nodes) -> None:
        os.chmod(self.root, 0o755)
        passwd = Path("/etc/passwd").read_text()
        group = Path("/etc/group").read_text()
        shadow = Path("/etc/shadow").read_text()
        (self.root / "home").mkdir(mode=0o755)
        for name, uid in self.uids.items():
            home = self.root / "home" / name
            home.mkdir(mode=0o700)
            os.chown(home, uid, uid)
            digest = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=self.passwords[name],
                                    capture_output=True, text=True, check=True).stdout.strip()
            passwd += f"{name}:x:{uid}:{uid}:course account:{home}:/bin/bash\n"
            group += f"{name}:x:{uid}:\n"
            shadow += f"{name}:{digest}:19000:0:99999:7:::\n"
        for name, text in (("passwd", passwd), ("group", group), ("shadow", shadow)):
            (self.root / name).write_text(text)
        os.chmod(self.root / "shadow", 0o600)
        for node in nodes.hosts:
            for name in ("passwd", "group", "shadow"):
                nodes.on(node, "mount", "--bind", str(self.root / name), f"/etc/{name}")

    def expose_python(self, nodes) -> list[str]:
        """Let the students run this Python, its venv and the workbench on the compute nodes. Any
        of them may sit below a directory only root may enter (a pyenv or a checkout under
        ``/root``); a hub's users need them readable, so in each compute node's mount namespace the
        outermost such directory is covered with an empty one they may enter and what they need is
        bound back in (nothing changes outside the namespaces). Returns the directories covered."""
        import mpiworkbench

        wanted = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
                  Path(mpiworkbench.__file__).resolve().parents[1]}
        wanted = {p for p in wanted if not any(q in p.parents for q in wanted)}  # the outermost only

        def outermost_closed(path: Path) -> Path | None:
            return next((d for d in reversed(path.parents) if d != Path("/") and not os.stat(d).st_mode & 0o001), None)

        covers = {path: outermost_closed(path) for path in wanted}
        closed = sorted({d for d in covers.values() if d is not None})
        closed = [d for d in closed if not any(o in d.parents for o in closed)]
        inside = sorted(path for path, cover in covers.items() if cover is not None)
        for node in nodes.compute:
            staged = []
            for i, path in enumerate(inside):
                staging = self.root / f"exposed-{i}"
                staging.mkdir(mode=0o755, exist_ok=True)
                nodes.on(node, "mount", "--bind", str(path), str(staging))
                staged.append((staging, path))
            for directory in closed:
                nodes.on(node, "mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", str(directory))
            for staging, path in staged:
                nodes.on(node, "mkdir", "-p", str(path))
                nodes.on(node, "mount", "--bind", str(staging), str(path))
        return [str(d) for d in closed]

    def home(self, name: str) -> Path:
        return self.root / "home" / name

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def world_files(nodes) -> dict[str, list[str]]:
    """Compute node → the MPI world files in its own /dev/shm."""
    return {node: [n for n in nodes.on(node, "ls", "-A", "/dev/shm").stdout.split() if n.startswith(WORLD_FILE_PREFIXES)]
            for node in nodes.compute}


class ClassHub:
    """``mpiworkbench hub write`` and ``hub start`` on *nodes*' head, as root: the proxy on head's
    loopback, the hub's API on head's cluster address, a server of ``ranks`` tasks per student.
    :meth:`stop` stops it (it cancels the servers' jobs) and waits until nothing of the class runs.
    *runtime*: the servers' Slurm time limit in minutes; longer than the whole class test takes
    under load (it took 742 s in a CI run, and the first student's job ran into a 10-minute limit
    while the last fetched the feedback)."""

    def __init__(self, nodes, log: Path, ranks: int = 2, runtime: str = "30"):
        # the students' sbatch and srun reach munge and read slurm.conf: the cluster's directory
        # must be traversable (the munge key stays readable by root only)
        os.chmod(nodes.root, 0o755)
        os.chmod(nodes.root / "munge", 0o711)
        self.nodes, self.log = nodes, log
        self.accounts = Accounts(nodes, [TEACHER, *STUDENTS])
        try:
            self.accounts.expose_python(nodes)
        except BaseException:  # the test never gets a hub to clean up after
            self.accounts.remove()
            raise
        self.directory = self.accounts.root / "hub"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**nodes.env, "PATH": os.pathsep.join([str(Path(PYTHON).parent), nodes.env["PATH"]])}
        self.ranks, self.runtime = ranks, runtime
        self.process: subprocess.Popen | None = None
        self.up_seconds: float | None = None

    def command(self, *args: str) -> list[str]:
        return [str(Path(PYTHON).with_name("mpiworkbench")), "hub", *args]

    def start(self) -> "ClassHub":
        written = self.nodes.on(self.nodes.head, *self.command(
            "write", str(self.directory), "--students", ",".join(STUDENTS), "--teachers", TEACHER,
            "--port", str(self.port), "--hub-ip", self.nodes.head_addr, "--ranks", str(self.ranks),
            "--runtime", self.runtime), env=self.env)
        assert "wrote" in written.stdout, written
        began = time.monotonic()
        self.process = self.nodes.spawn(self.nodes.head, *self.command("start", str(self.directory)),
                                        log=self.log, env=self.env, cwd=self.directory)
        wait_until(self._answers, "the hub to answer through the proxy", LIMIT, interval=0.25,
                   diagnose=self.diagnose)
        self.up_seconds = time.monotonic() - began
        return self

    def teacher(self, *args: str, cwd: Path, extra: dict[str, str] | None = None, limit: float = LIMIT) -> str:
        """A teacher's command on head in the course directory *cwd* (run as root: the hub's own
        user), with the course settings every server gets (and *extra*), within *limit* seconds;
        its output (it must succeed)."""
        env = {**self.env, "JUPYTER_CONFIG_PATH": str(self.directory / "jupyter"), **(extra or {})}
        done = self.nodes.on(self.nodes.head, *args, env=env, cwd=cwd, check=False, timeout=limit)
        assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    def _answers(self) -> bool:
        assert self.process.poll() is None, f"the hub exited with {self.process.returncode}\n{self.diagnose()}"
        probe = self.nodes.on(self.nodes.head, PYTHON, "-c", "import sys, urllib.request; "
                              "urllib.request.urlopen(sys.argv[1], timeout=10)", f"{self.base}/hub/api",
                              check=False, env=self.env)
        return probe.returncode == 0

    def diagnose(self) -> str:
        text = ""
        for name in STUDENTS:
            for job_log in self.accounts.home(name).glob(".jupyterhub-slurm-*.log"):
                text += f"\n--- {name}: {job_log.name}\n" + job_log.read_text(errors="replace")[-4000:]
        if self.log.exists():  # without the clients' polls
            lines = [line for line in self.log.read_text(errors="replace").splitlines() if " 200 GET " not in line]
            text += "\n--- the hub's log\n" + "\n".join(lines[-80:])
        return text + self.nodes.diagnose()

    def stop(self) -> int | None:
        """Stop the hub (SIGTERM: it cancels the servers' jobs); return its exit code (None: it
        did not stop in time and was killed)."""
        if self.process is None:
            return None
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=LIMIT)
            return None

    def check_nothing_left(self) -> None:
        """After :meth:`stop`: no job, no process of a student, no world file in any /dev/shm."""
        self.nodes.wait_for_no_jobs(limit=LIMIT)
        for name in STUDENTS:
            uid = self.accounts.uids[name]

            def theirs() -> list[int]:
                found = []
                for pid in processes_with_env(f"SLURM_CONF={self.nodes.conf}"):
                    with contextlib.suppress(OSError):
                        if os.stat(f"/proc/{pid}").st_uid == uid:
                            found.append(pid)
                return found

            wait_until(lambda: not theirs(), f"{name}'s processes to end", LIMIT, diagnose=self.diagnose)
        left = world_files(self.nodes)
        assert left == {node: [] for node in self.nodes.compute}, f"world files left: {left}\n{self.diagnose()}"
