"""A simulated multi-node cluster on one machine: Linux network namespaces plus a private Slurm.

Every "node" (``head``, ``node1``, ``node2``) is a network namespace of its own, joined to the
others by a bridge that lives inside head's namespace, so all addresses exist only inside
namespaces this module made (nothing is added to the machine's own network). Each node also
has a long-lived *holder* process that owns the node's other namespaces: its hostname (UTS),
its ``/etc/hosts`` (a bind mount in a private mount namespace), a private ``/dev/shm`` (so MPI
shared memory never crosses "hosts"), a ``/sys`` that shows the node's own interfaces, and
its IPC namespace. Everything else enters a node with ``nsenter -t HOLDER ...``.

Slurm runs on top: one ``munged`` (its filesystem socket works across network namespaces),
``slurmctld`` in head and one ``slurmd -N nodeX`` in every compute node. Client commands
(``srun``, ``sbatch``, ``squeue``, ...) run inside head. The cluster is a
:class:`tests.cluster.slurm.Slurm` whose commands and daemons go through the namespaces, so
its queue helpers (``jobs``, ``job_state``, ``wait_for_no_jobs``, ``cancel_all``) are reused.

The ``multinode`` fixture (scope ``module``) builds the cluster and always tears it down: jobs
cancelled, every process it started stopped by pid, the namespaces deleted, the temp dir
removed. It skips when not root, when a program is missing or when ``ip netns add`` fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.cluster.slurm import (STOP_LIMIT, Slurm, _memory_mb, _which, missing_binaries, slurm_conf,
                                 processes_with_env, wait_until)

#: Programs the namespaces need besides Slurm's and munge's.
NETNS_TOOLS = ("ip", "nsenter", "unshare", "mount", "hostname", "sleep")
#: Slurm job states after which a job holds nothing any more.
ENDED = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE", "GONE")
#: Generous bound (seconds) on polled conditions while the cluster comes up.
UP_LIMIT = 60
#: How long teardown lets processes it did not start end by themselves before killing them.
STRAY_LIMIT = 15


def _path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def missing_programs() -> list[str]:
    """Slurm, munge and namespace programs not found on PATH (``/usr/sbin`` included)."""
    return missing_binaries() + [name for name in NETNS_TOOLS + ("srun",)
                                 if shutil.which(name, path=_path()) is None]


def alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie counts as gone: PID 1 reaps re-parented orphans late)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def netns_list() -> list[str]:
    """Names of the named network namespaces on this machine (``ip netns list``)."""
    out = subprocess.run([_which("ip"), "netns", "list"], capture_output=True, text=True,
                         timeout=30, check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()]


def _ip(*args: str) -> None:
    """One ``ip`` command; fail with its error message."""
    result = subprocess.run([_which("ip"), *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")


def _stop_popen(proc: subprocess.Popen, limit: float = STOP_LIMIT) -> None:
    """SIGTERM *proc*, wait (bounded), then SIGKILL: a process this module started."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=limit)


class Nodes(Slurm):
    """A head node and compute nodes, each a set of namespaces, with Slurm across them.

    Parameters
    ----------
    root : Path
        A fresh temporary directory (short: munge's socket path must fit a ``sockaddr_un``);
        every file of the cluster goes there.
    compute : int
        How many compute nodes (``node1`` ...); each gets ``cpus`` Slurm CPUs.
    cpus : int
        CPUs per compute node as Slurm sees them (``SlurmdParameters=config_overrides``, so
        the nodes may promise together more than the machine has).

    Attributes
    ----------
    tag : str
        Random per-run word in every namespace name (``mpiwb-<tag>-head``), so concurrent
        runs never clash.
    hosts : dict
        Hostname → address on the cluster network, head first.
    namespaces : dict
        Hostname → network namespace name.
    """

    def __init__(self, root: Path, compute: int = 2, cpus: int = 2):
        super().__init__(root)
        self.tag = secrets.token_hex(3)
        # the subnet exists only inside this run's namespaces; a random one per run anyway
        self.subnet = f"10.201.{secrets.randbelow(254) + 1}"
        self.head = "head"
        self.compute = [f"node{i}" for i in range(1, compute + 1)]
        self.hosts = {self.head: f"{self.subnet}.1",
                      **{name: f"{self.subnet}.{10 + i}" for i, name in enumerate(self.compute, 1)}}
        self.namespaces = {name: f"mpiwb-{self.tag}-{name}" for name in self.hosts}
        self.node = ",".join(self.compute)  # what Slurm.node names in the single-node fixture
        self.cpus = cpus
        self.made: list[str] = []  # namespaces created so far (deleted in reverse order)
        self.holders: dict[str, subprocess.Popen] = {}
        self.extra: list[subprocess.Popen] = []  # processes tests started through spawn()
        #: Called first in :meth:`stop` (newest first): a test's own orderly shutdown of what it
        #: started (``ipcluster stop``), which then still runs when the test failed half-way.
        self.cleanups: list[Callable[[], object]] = []
        self.forced: list[str] = []  # processes teardown had to kill without having started them
        self.cancelled: list[str] = []  # jobs still queued when teardown began
        self.env["PATH"] = _path()

    @property
    def head_addr(self) -> str:
        """The head node's address: where a controller must listen for the compute nodes."""
        return self.hosts[self.head]

    # -- entering a node -------------------------------------------------------------------
    def enter(self, node: str, wd: str | os.PathLike | None = None) -> list[str]:
        """The ``nsenter`` prefix that runs a command on *node* (its network, hostname, mounts
        and IPC), in *wd* (default: the cluster's temp dir)."""
        holder = self.holders[node]
        return [_which("nsenter"), "-t", str(holder.pid), "-n", "-u", "-m", "-i",
                f"--wd={wd or self.root}", "--"]

    def on(self, node: str, *args: str, check: bool = True, timeout: float = 60,
           env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None,
           **kw) -> subprocess.CompletedProcess:
        """Run *args* on *node* and wait (output captured as text); *args[0]* is looked up on
        PATH here. ``env`` defaults to :attr:`env` (``SLURM_CONF`` set, outer Slurm cleared)."""
        return subprocess.run([*self.enter(node, cwd), shutil.which(args[0], path=_path()) or args[0],
                               *args[1:]], capture_output=True, text=True, check=check, timeout=timeout,
                              env=self.env if env is None else env, stdin=subprocess.DEVNULL, **kw)

    def run(self, *args: str, check: bool = True, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """A Slurm client command (``srun``, ``squeue`` ...) on the head node."""
        return self.on(self.head, *args, check=check, timeout=timeout, **kw)

    def spawn(self, node: str, *args: str, log: Path, env: dict[str, str] | None = None,
              cwd: str | os.PathLike | None = None) -> subprocess.Popen:
        """Start *args* on *node* in the background (stdout and stderr appended to *log*).

        The process is remembered: teardown stops it if the test did not."""
        with open(log, "ab") as out:
            proc = subprocess.Popen([*self.enter(node, cwd), *args], env=self.env if env is None else env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        self.extra.append(proc)
        return proc

    # -- building ----------------------------------------------------------------------------
    def _network(self) -> None:
        """Namespaces, the bridge in head, one veth per compute node, addresses, links up."""
        head = self.namespaces[self.head]
        for name in self.hosts:
            _ip("netns", "add", self.namespaces[name])
            self.made.append(self.namespaces[name])
        _ip("-n", head, "link", "add", "br0", "type", "bridge")
        _ip("-n", head, "addr", "add", f"{self.head_addr}/24", "dev", "br0")
        _ip("-n", head, "link", "set", "br0", "up")
        _ip("-n", head, "link", "set", "lo", "up")
        for i, name in enumerate(self.compute, 1):
            ns = self.namespaces[name]
            # created inside head, the peer moved straight into the node: nothing ever exists
            # in the machine's own namespace
            _ip("-n", head, "link", "add", f"veth{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("-n", head, "link", "set", f"veth{i}", "master", "br0")
            _ip("-n", head, "link", "set", f"veth{i}", "up")
            _ip("-n", ns, "addr", "add", f"{self.hosts[name]}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _holder(self, name: str) -> subprocess.Popen:
        """Start *name*'s holder: new UTS, mount and IPC namespaces in the node's network
        namespace, set up, then ``sleep infinity`` keeps them alive."""
        hosts = self.root / f"hosts-{name}"
        hosts.write_text("127.0.0.1 localhost\n"
                         + "".join(f"{addr} {host}\n" for host, addr in self.hosts.items()))
        aside = self.root / f"cgroup-{name}"
        aside.mkdir()
        # /sys is mounted again so it shows this namespace's interfaces (what UCX and hwloc
        # read); the cgroup tree is moved aside and back, or slurmd's cgroup plugin fails
        script = "\n".join([
            "set -e",
            f"hostname {name}",
            f"mount --bind {hosts} /etc/hosts",
            "mount -t tmpfs -o mode=1777 tmpfs /dev/shm",
            f"mount --rbind /sys/fs/cgroup {aside}",
            "mount -t sysfs sysfs /sys",
            f"mount --move {aside} /sys/fs/cgroup",
            "exec sleep infinity",
        ])
        with open(self.root / "log" / f"holder-{name}.log", "ab") as log:
            return subprocess.Popen(
                [_which("nsenter"), f"--net=/run/netns/{self.namespaces[name]}", _which("unshare"),
                 "--uts", "--mount", "--ipc", "--propagation", "private", "sh", "-c", script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.root)

    def _holders_ready(self) -> bool:
        for name, proc in self.holders.items():
            if proc.poll() is not None:
                log = (self.root / "log" / f"holder-{name}.log").read_text(errors="replace")
                raise AssertionError(f"the holder of {name} exited with {proc.returncode}:\n{log}")
        # each holder execs sleep only once every mount succeeded (set -e)
        return all(Path(f"/proc/{p.pid}/comm").read_text().strip() == "sleep" for p in self.holders.values())

    def _write_files(self) -> None:
        for sub in ("munge", "log", "state", "run"):
            (self.root / sub).mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in self.compute:
            (self.root / f"spool-{name}").mkdir(mode=0o700)
            (self.root / f"tmp-{name}").mkdir(mode=0o1777)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        (self.root / "plugstack.conf").write_text("")  # no SPANK plugins of the machine's
        r = self.root
        nodes = "\n".join(f"NodeName={name} NodeAddr={self.hosts[name]} CPUs={self.cpus} "
                          f"RealMemory={_memory_mb()} State=UNKNOWN" for name in self.compute)
        # every daemon sits in a network namespace of its own: Slurm's default ports never clash
        self.conf.write_text(slurm_conf(
            "multi-node", r, self.munge_socket, f"SlurmctldHost={self.head}({self.head_addr})", nodes,
            f"PartitionName={self.partition} Nodes={self.node}", per_node="-%n",
            # each node's own TmpFS (where Slurm's PMIx server keeps a step's directory): the nodes
            # share one /tmp, and two of them creating /tmp/spmix_appdir_<uid>_<step> collide
            extra=f"PlugStackConfig={r}/plugstack.conf\nSlurmdParameters=config_overrides\nTmpFS={r}/tmp-%n\n"))

    def _daemon(self, key: str, node: str, *args: str) -> None:
        """Start a Slurm daemon on *node* (foreground, so its pid is the one we hold)."""
        with open(self.root / "log" / f"{key}.stdout", "ab") as log:
            self.procs[key] = subprocess.Popen([*self.enter(node), _which(args[0]), *args[1:]],
                                               env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

    def node_states(self) -> dict[str, str]:
        """Compute node → state as ``sinfo`` reports it (empty when slurmctld does not answer)."""
        try:
            result = self.run("sinfo", "--noheader", "--Node", "--format=%N %t", check=False, timeout=20)
        except subprocess.TimeoutExpired:
            return {}
        return dict(line.split()[:2] for line in result.stdout.splitlines() if len(line.split()) >= 2)

    def node_state(self) -> str:
        states = set(self.node_states().values())
        return states.pop() if len(states) == 1 else ",".join(sorted(states))

    def start(self) -> "Nodes":
        """Build the network, the holders and Slurm; return once every node is idle."""
        started = time.monotonic()
        self._write_files()
        self._network()
        for name in self.hosts:
            self.holders[name] = self._holder(name)
        wait_until(self._holders_ready, "the nodes' holders to set up their namespaces", UP_LIMIT)
        r = self.root
        self._start("munged", "-F", "-f", f"--socket={self.munge_socket}",
                    f"--key-file={r}/munge/munge.key", f"--pid-file={r}/run/munged.pid",
                    f"--log-file={r}/log/munged.log", f"--seed-file={r}/munge/munged.seed")
        wait_until(lambda: self._check_alive() or self.munge_socket.exists(), "munged's socket",
                   UP_LIMIT, diagnose=self.diagnose)
        self._daemon("slurmctld", self.head, "slurmctld", "-D", "-c", "-f", str(self.conf))
        for name in self.compute:
            self._daemon(f"slurmd-{name}", name, "slurmd", "-D", "-N", name, "-f", str(self.conf))

        def idle():
            self._check_alive()
            states = self.node_states()
            return all(states.get(name) == "idle" for name in self.compute)

        wait_until(idle, f"sinfo to report {', '.join(self.compute)} idle", UP_LIMIT, interval=0.2,
                   diagnose=self.diagnose)
        self.startup_seconds = time.monotonic() - started
        return self

    # -- diagnosing ---------------------------------------------------------------------------
    def diagnose(self) -> str:
        """Log tails, node states and the queue, for failure messages."""
        parts = []
        logs = ["munged.log", "slurmctld.log", *(f"slurmd-{name}.log" for name in self.compute)]
        for name in logs:
            log = self.root / "log" / name
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-20:]
                parts.append(f"--- {name} (tail)\n" + "\n".join(tail))
        if self.head in self.holders and self._alive("slurmctld"):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                parts.append("--- sinfo\n" + self.run("sinfo", "--Node", check=False, timeout=10).stdout)
                parts.append("--- squeue\n" + self.run("squeue", "--states=all", check=False, timeout=10).stdout)
        return "\n".join(parts)

    def wait_job(self, job: str, limit: float, output: Path | None = None) -> str:
        """Wait (bounded) until *job* has ended; return its last state (``GONE`` once purged)."""
        last = {}

        def ended():
            last["state"] = self.job_state(job)
            return last["state"] in ENDED

        def diagnose():
            text = output.read_text(errors="replace") if output and output.exists() else ""
            return text + "\n" + self.diagnose()

        wait_until(ended, f"job {job} to end", limit, interval=0.2, diagnose=diagnose)
        return last["state"]

    # -- tearing down -------------------------------------------------------------------------
    def _namespace_ids(self) -> set[tuple[int, int]]:
        ids = set()
        for ns in self.made:
            with contextlib.suppress(OSError):
                st = os.stat(f"/run/netns/{ns}")
                ids.add((st.st_dev, st.st_ino))
        return ids

    def processes_inside(self) -> list[int]:
        """Live pids in this cluster's network namespaces (holders included)."""
        ids = self._namespace_ids()
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                st = os.stat(f"/proc/{pid}/ns/net")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in ids and alive(int(pid)):
                found.append(int(pid))
        return found

    def stop(self) -> None:
        """Tear everything down, whatever state it is in; record in :attr:`forced` what had to
        be killed without this module having started it. Never raises for a step that fails:
        every later step still runs."""
        started = time.monotonic()
        # 0. what tests registered to shut down in order (a failed test's ipcluster)
        while self.cleanups:
            with contextlib.suppress(Exception):
                self.cleanups.pop()()
        # 1. the queue: jobs first, while slurmctld and the slurmds still run to end them
        if self._alive("slurmctld"):
            with contextlib.suppress(AssertionError, OSError, subprocess.SubprocessError):
                left = self.jobs()
                if left:
                    self.cancelled += left
                    self.run("scancel", *left, check=False)
                    self.wait_for_no_jobs(limit=STOP_LIMIT)
        # 2. processes tests started through spawn() (an ipcluster whose test failed, say)
        for proc in self.extra:
            _stop_popen(proc)
        # 3. the daemons, compute nodes first, munged last
        for key in [k for k in self.procs if k.startswith("slurmd")] + ["slurmctld", "munged"]:
            proc = self.procs.pop(key, None)
            if proc is not None:
                _stop_popen(proc)
        # 4. anything else still inside the namespaces (job steps a daemon left behind): they
        #    are this cluster's by construction; a little time to end by themselves (a step
        #    finishing its cancelled job), then SIGKILL by pid, and remembered
        holders = {p.pid for p in self.holders.values()}

        def stray() -> list[int]:
            return [pid for pid in self.processes_inside() if pid not in holders]

        with contextlib.suppress(AssertionError):
            wait_until(lambda: not stray(), "job steps to end", STRAY_LIMIT)
        stray = stray()
        for pid in stray:
            with contextlib.suppress(OSError):
                self.forced.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes()
                                   .replace(b"\0", b" ").decode(errors="replace").strip())
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # 5. the holders, then the namespaces (deleting head's removes the bridge and veths)
        for proc in self.holders.values():
            _stop_popen(proc)
        with contextlib.suppress(AssertionError):
            wait_until(lambda: not self.processes_inside(), "the nodes' processes to end", STOP_LIMIT)
        for ns in reversed(self.made):
            with contextlib.suppress(RuntimeError, OSError, subprocess.SubprocessError):
                _ip("netns", "del", ns)
        self.teardown_seconds = time.monotonic() - started

    def leftovers(self) -> list[str]:
        """What of this cluster still exists after :meth:`stop` (should be nothing)."""
        left = [f"namespace {ns}" for ns in netns_list() if ns in self.made]
        pids = {p.pid for p in [*self.holders.values(), *self.procs.values(), *self.extra]}
        pids |= set(processes_with_env(f"SLURM_CONF={self.conf}"))
        left += [f"process {pid}" for pid in sorted(pids) if alive(pid)]
        return left


class HeadIPCluster:
    """``ipcluster start -n N --profile=NAME`` on the head node of *nodes*, in a process the
    test owns; :meth:`stop` runs ``ipcluster stop`` there and waits for every process of the
    cluster to end (its IPython directory is in all their environments)."""

    def __init__(self, nodes: Nodes, profile: str, ipython_dir: Path, cwd: Path, env: dict[str, str]):
        self.nodes, self.profile, self.cwd = nodes, profile, cwd
        self.env = {**env, "IPYTHONDIR": str(ipython_dir)}
        self.profile_dir = ipython_dir / f"profile_{profile}"
        self.cluster_file = self.profile_dir / "security" / "cluster-.json"
        self.log = cwd / "ipcluster.log"
        self.server: subprocess.Popen | None = None

    def diagnose(self) -> str:
        text = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
        # the engines' job writes its output there (the profile's batch template says so)
        for job_log in sorted((self.profile_dir / "log").glob("ipengine-*.log")) if self.profile_dir.exists() else []:
            text += f"\n--- {job_log.name}\n" + job_log.read_text(errors="replace")[-3000:]
        return text + "\n" + self.nodes.diagnose()

    def start(self, n: int, limit: float) -> None:
        """Start ipcluster; return once its cluster file records the engine set."""
        from mpiworkbench.client.cluster.attach import engines_recorded

        self.server = self.nodes.spawn(
            self.nodes.head, str(Path(sys.executable).with_name("ipcluster")), "start", "-n", str(n),
            f"--profile={self.profile}", "--log-level=DEBUG", log=self.log, env=self.env, cwd=self.cwd)

        def recorded():
            assert self.server.poll() is None, f"ipcluster exited early\n{self.diagnose()}"
            return engines_recorded(self.cluster_file)

        # from here on the cluster's teardown stops this ipcluster too, should the test not get to
        self.nodes.cleanups.append(lambda: self.stop(limit))
        wait_until(recorded, "ipcluster to write its cluster file", limit, diagnose=self.diagnose)

    def stop(self, limit: float) -> list[int]:
        """``ipcluster stop`` on head, then wait (bounded) for the cluster's processes to end;
        kill by pid what is left and return those pids (empty: all ended by themselves)."""
        if self.server is None:
            return []
        self.server, server = None, self.server
        mine = f"IPYTHONDIR={self.env['IPYTHONDIR']}"
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.nodes.on(self.nodes.head, str(Path(sys.executable).with_name("ipcluster")), "stop",
                          f"--profile={self.profile}", env=self.env, cwd=self.cwd, check=False, timeout=limit)
        try:
            server.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        try:
            wait_until(lambda: not processes_with_env(mine), "the cluster's processes to exit", limit)
        except AssertionError:
            left = processes_with_env(mine)
            for pid in left:  # started under this test's IPython directory: ours
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return left
        return []


def client_json(result: subprocess.CompletedProcess) -> dict:
    """The JSON object a client script printed as its last stdout line (with its stderr on
    failure)."""
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert result.returncode == 0 and lines, (
        f"client exited {result.returncode}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-5000:]}")
    return json.loads(lines[-1])


def simulated_cluster(compute: int = 2, cpus: int = 2):
    """A started :class:`Nodes` cluster (head and *compute* nodes of *cpus* Slurm CPUs each),
    torn down when the generator is closed, and checked that nothing is left; skips where it
    cannot be built."""
    missing = missing_programs()
    if missing:
        pytest.skip(f"programs for the simulated cluster not installed ({', '.join(missing)}); "
                    "apt-get install slurm-wlm munge iproute2 util-linux")
    if os.geteuid() != 0:
        pytest.skip("the simulated cluster needs root (network namespaces, mounts, SlurmUser=root)")
    probe = f"mpiwb-{secrets.token_hex(3)}-probe"
    added = subprocess.run([_which("ip"), "netns", "add", probe], capture_output=True, text=True, timeout=30)
    if added.returncode != 0:
        pytest.skip(f"cannot create network namespaces here: ip netns add: {added.stderr.strip()}")
    _ip("netns", "del", probe)
    root = Path(tempfile.mkdtemp(prefix="mpiwb-nodes-"))  # short: munge's socket path
    nodes = Nodes(root, compute=compute, cpus=cpus)
    try:
        nodes.start()
    except BaseException:  # the error already carries the logs' tails
        nodes.stop()
        if not nodes.leftovers():
            shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        yield nodes
    finally:
        nodes.stop()
    left = nodes.leftovers()
    if not left and not nodes.forced:
        shutil.rmtree(root, ignore_errors=True)
    assert not left, f"the simulated cluster left {left}; files kept in {root}"
    assert not nodes.cancelled, f"jobs still in squeue when the tests ended (cancelled then): {nodes.cancelled}"
    assert not nodes.forced, (f"teardown had to kill processes nobody stopped: {nodes.forced}; "
                              f"files kept in {root}")


@pytest.fixture(scope="module")
def multinode():
    """A started :class:`Nodes` cluster (head, node1, node2; 2 Slurm CPUs per compute node)
    shared by the module's tests; torn down afterwards, and checked that nothing is left."""
    yield from simulated_cluster(compute=2, cpus=2)


@pytest.fixture
def three_nodes():
    """Head and node1..node3 of one Slurm CPU each, for one test."""
    yield from simulated_cluster(compute=3, cpus=1)

