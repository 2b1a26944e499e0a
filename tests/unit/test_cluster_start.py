"""How a workbench's own cluster is started (``mpiworkbench.client.cluster.start.new_cluster``,
``mpiworkbench.client.cluster.engine_start``), without starting one: the engines are launched with the
controller and read its connection file only when no stale file of that cluster id could
mislead them; each engine's nanny is forked from it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import zmq

from mpiworkbench.client.cluster import engine_start, start


@pytest.fixture
def ipython_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    return tmp_path


def test_a_fresh_cluster_launches_its_engines_with_the_controller(ipython_dir):
    cluster = start.new_cluster(2, "fresh-id")
    assert not cluster.send_engines_connection_env  # engines read the file; mpiexec starts at once
    launcher = cluster.config.MPIEngineSetLauncher
    assert launcher.engine_cmd == engine_start.ENGINE_CMD
    assert f"--IPEngine.wait_for_url_file={start.CONNECTION_FILE_WAIT_S}" in launcher.engine_args
    assert start.engine_connection_file(cluster).name == "ipcontroller-fresh-id-engine.json"
    # the engines wait until the file is whole, not only until it exists
    assert launcher.environment[engine_start.CONNECTION_FILE_VARIABLE] == (
        f"{start.engine_connection_file(cluster)}:{start.CONNECTION_FILE_WAIT_S}")
    assert cluster.controller_ip == "127.0.0.1"  # the file the engines read names loopback only


def test_the_connection_file_is_named_as_ipyparallel_names_it(ipython_dir):
    # the empty id (ipcluster's default, which a session that attached and detached keeps) has no id part
    cluster = start.new_cluster(1, "")
    launcher = cluster.engine_launcher_class(work_dir=".", parent=cluster, log=cluster.log, profile_dir=cluster.profile_dir,
                                             cluster_id=cluster.cluster_id, engine_set_id="1")
    assert str(start.engine_connection_file(cluster)) == launcher.connection_files["engine"]
    assert start.engine_connection_file(cluster).name == "ipcontroller-engine.json"


def test_a_stale_connection_file_makes_the_engines_wait_for_the_controller(ipython_dir):
    cluster = start.new_cluster(2, "reused-id")
    stale = start.engine_connection_file(cluster)
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("{}")
    again = start.new_cluster(2, "reused-id")
    assert again.send_engines_connection_env  # ipyparallel's way: the connection in their environment


def test_engines_wait_until_the_connection_file_is_whole(tmp_path):
    path = tmp_path / "ipcontroller-x-engine.json"
    assert not engine_start.wait_for_connection_file(f"{path}:0")  # missing: gives up at the deadline
    path.write_text('{\n  "key": "abc",\n  "interf')  # caught half-written
    assert not engine_start.wait_for_connection_file(f"{path}:0.05")
    path.write_text('{"key": "abc", "interface": "tcp://127.0.0.1"}')
    assert engine_start.wait_for_connection_file(f"{path}:0")


FAKE_NANNY = textwrap.dedent("""
    import pickle, sys
    kwargs = pickle.load(sys.stdin.buffer)
    print(f"tcp://127.0.0.1:{kwargs['engine_id'] + 5000} {kwargs['pid']}", flush=True)
    sys.stdin.close()
""")


def _fake_nanny() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", FAKE_NANNY], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_a_nanny_process_gets_the_arguments_ipyparallel_would_start_one_with():
    nanny = _fake_nanny()
    fallback_calls = []
    start = engine_start.handing_over(nanny, lambda **kw: fallback_calls.append(kw) or ("fallback", None))
    url, process = start(engine_id=3, control_url="tcp://127.0.0.1:1")
    assert url == f"tcp://127.0.0.1:5003 {os.getpid()}"  # the nanny watches the engine: this process
    assert process is nanny and not fallback_calls
    assert nanny.wait(timeout=30) == 0
    # a second engine start in the same process (never happens in ipyparallel) starts its own
    assert start(engine_id=4) == ("fallback", None)


def test_a_dead_prestarted_nanny_is_replaced_by_ipyparallels_own():
    nanny = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    nanny.wait(timeout=30)
    start = engine_start.handing_over(nanny, lambda **kw: ("started by ipyparallel", kw["engine_id"]))
    assert start(engine_id=1) == ("started by ipyparallel", 1)


def test_a_prestarted_nanny_that_fails_is_replaced_by_ipyparallels_own():
    nanny = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    start = engine_start.handing_over(nanny, lambda **kw: ("started by ipyparallel", kw["engine_id"]))
    assert start(engine_id=2) == ("started by ipyparallel", 2)
    assert nanny.poll() is not None


class _FakeKernelNanny:
    """What the forked child runs instead of ipyparallel's nanny: answers with its URL, the
    engine it watches, whether it leads a session of its own and the descriptors it holds."""

    @classmethod
    def main(cls, *, engine_id, pid, pipe, **kwargs):
        fds = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
        pipe.write(f"tcp://127.0.0.1:{5000 + engine_id} {pid} {os.getsid(0) == os.getpid()} {fds}\n")


def test_the_forked_nanny_gets_the_arguments_ipyparallel_would_start_one_with(monkeypatch):
    from ipyparallel.engine import nanny as ipp_nanny

    monkeypatch.setattr(ipp_nanny, "KernelNanny", _FakeKernelNanny)  # the child is a fork: it sees this
    kept_open = os.pipe()  # a descriptor of the engine's that the nanny must not hold
    try:
        nanny = engine_start.ForkedNanny()
        start = engine_start.handing_over(nanny, lambda **kw: ("fallback", None))
        url, process = start(engine_id=3, control_url="tcp://127.0.0.1:1")
    finally:
        for fd in kept_open:
            os.close(fd)
    address, watched, own_session, fds = url.split(" ", 3)
    assert (address, watched, own_session) == ("tcp://127.0.0.1:5003", str(os.getpid()), "True")
    assert max(eval(fds)) <= 3  # noqa: S307 - stdin, its pipe, stderr and the listing's own
    assert process is nanny
    assert nanny.wait() == 0 and nanny.poll() == 0
    assert start(engine_id=4) == ("fallback", None)  # a second engine start gets ipyparallel's own


def test_a_forked_nanny_that_fails_is_replaced_by_ipyparallels_own(monkeypatch):
    from ipyparallel.engine import nanny as ipp_nanny

    class Failing:
        @classmethod
        def main(cls, **kwargs):
            raise RuntimeError("no nanny today")

    monkeypatch.setattr(ipp_nanny, "KernelNanny", Failing)
    nanny = engine_start.ForkedNanny()
    start = engine_start.handing_over(nanny, lambda **kw: ("started by ipyparallel", kw["engine_id"]))
    assert start(engine_id=2) == ("started by ipyparallel", 2)
    assert nanny.poll() == 1


def test_the_engine_command_runs_the_file_without_importing_the_client_package():
    # importing mpiworkbench.client costs each rank ~1 s: the engine command must not
    code = engine_start.ENGINE_CMD[-1].replace("run_name='__main__'", "run_name='probe'")
    probe = code + "; import sys; print('mpiworkbench.client' in sys.modules, 'ipyparallel' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "False"]



def test_the_watchdog_command_ends_the_cluster_when_its_parent_dies_without_the_client_package(tmp_path):
    from mpiworkbench.client.cluster import watchdog
    from mpiworkbench.client.cluster.record import world_directory

    probe = watchdog.WATCHDOG_CODE.replace("run_name='__main__'", "run_name='probe'") + (
        "\nimport sys; print('ipyparallel' in sys.modules, sorted(name for name in sys.modules if name.startswith('mpiworkbench')))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    loaded_ipyparallel, loaded = out.stdout.split(" ", 1)
    assert loaded_ipyparallel == "False" and "mpiworkbench.client.calls.session" not in loaded
    assert set(eval(loaded)) <= {  # noqa: S307
        "mpiworkbench", "mpiworkbench.client", "mpiworkbench.client.cluster", "mpiworkbench.client.cluster.record",
        "mpiworkbench.core", "mpiworkbench.core.processes", "mpiworkbench.core.shm",
        "mpiworkbench.lab", "mpiworkbench.lab.protocol"}  # (the world's file names: standard library only)

    profile, cluster_id = str(tmp_path / "profile_x"), "the-id"
    sleeper = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    parent = subprocess.Popen(sleeper, stdin=subprocess.PIPE)
    # one of the cluster's processes (as ipyparallel's launchers start them), and a process of
    # someone else's whose pid the cluster file records: an engine set that stopped long ago
    # and whose pid was given to another process since
    engines = subprocess.Popen(sleeper, stdin=subprocess.PIPE,
                               env={**os.environ, "IPP_CLUSTER_ID": cluster_id, "IPP_PROFILE_DIR": profile})
    stranger = subprocess.Popen(sleeper, stdin=subprocess.PIPE,
                                env={**os.environ, "IPP_CLUSTER_ID": "another", "IPP_PROFILE_DIR": profile})
    files = watchdog.cluster_files(profile, cluster_id)
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    files[0].write_text(json.dumps({"engines": {"sets": {"1": {"pid": stranger.pid}, "2": {"pid": engines.pid}}}}))
    world = world_directory(profile, cluster_id)
    (world / "queue").mkdir(parents=True)
    dog = subprocess.Popen([sys.executable, "-c", watchdog.WATCHDOG_CODE, str(parent.pid), profile, cluster_id])
    try:
        parent.kill()
        parent.wait(timeout=30)
        assert dog.wait(timeout=60) == 0
        assert engines.wait(timeout=30) is not None
        assert stranger.poll() is None, "the watchdog signalled a process that is not its cluster's"
        assert not [path for path in files if path.exists()] and not world.exists()
    finally:
        for process in (parent, engines, stranger, dog):
            if process.poll() is None:
                process.kill()
                process.wait()


#: A rank as a launcher ending a job leaves it: its segment made and held, its footprint recorded
#: (where $MPIWORKBENCH_FOOTPRINT_DIR says), then killed before it could remove anything.
RANK = """
import os, sys
from mpiworkbench.core import shm
held = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
print(shm.record_footprint(), flush=True)
sys.stdin.read()
"""


def _wait(condition, timeout: float) -> bool:
    """Poll *condition* until it holds, at most *timeout* seconds; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _handles_sigterm(pid: int) -> bool:
    """Whether process *pid* has a handler of its own for SIGTERM (``SigCgt`` in its status)."""
    with open(f"/proc/{pid}/status") as status:
        caught = next(int(line.split()[1], 16) for line in status if line.startswith("SigCgt:"))
    return bool(caught & (1 << (signal.SIGTERM - 1)))


#: A notebook's process with its workbench's watchdog (:func:`start_watchdog`); on the line
#: "stop" it stops it as a normal stop does and prints its exit status.
PARENT = """
import sys
from mpiworkbench.client.cluster.watchdog import start_watchdog, stop_watchdog
dog = start_watchdog(sys.argv[1], sys.argv[2])
print(dog.pid, flush=True)
if sys.stdin.readline().strip() == "stop":
    stop_watchdog(dog)
    print(dog.returncode, flush=True)
sys.stdin.read()
"""


def test_a_sigterm_has_the_watchdog_end_its_cluster_and_remove_what_its_dead_ranks_recorded(tmp_path):
    """At a Slurm job's end every process of the job gets SIGTERM, and MPICH's launcher kills its
    ranks at once: the watchdog, its parent still alive, lets the cluster's processes end, then
    removes the files the footprints its ranks recorded name, a killed rank's too. A normal stop's
    :func:`stop_watchdog` ends the watchdog alone."""
    from mpiworkbench.client.cluster.record import footprint_directory
    from mpiworkbench.core import processes, shm

    profile, cluster_id = str(tmp_path / "profile_x"), "the-id"
    footprints = footprint_directory(profile, cluster_id)
    footprints.mkdir(parents=True)
    segment = os.path.join(shm.SHM_DIR, f"mpich_shm_wbterm{os.getpid()}_0")
    cluster_env = {**os.environ, "IPP_CLUSTER_ID": cluster_id, "IPP_PROFILE_DIR": profile}
    started = []

    def start(command, **kwargs):
        started.append(subprocess.Popen(command, stdin=subprocess.PIPE, text=True, **kwargs))
        return started[-1]

    def watched():
        """A notebook's process and the pid of its watchdog, once that handles SIGTERM."""
        parent = start([sys.executable, "-c", PARENT, profile, cluster_id], stdout=subprocess.PIPE)
        dog = int(parent.stdout.readline())
        assert _wait(lambda: _handles_sigterm(dog), 60), "the watchdog set its SIGTERM handler"
        return parent, dog

    try:
        rank = start([sys.executable, "-c", RANK, segment], stdout=subprocess.PIPE,
                     env={**cluster_env, shm.FOOTPRINT_DIR_VARIABLE: str(footprints)})
        assert rank.stdout.readline().strip(), "the rank recorded its footprint"
        rank.kill()
        rank.wait(timeout=30)
        assert os.path.exists(segment), "a killed rank leaves its segment"
        engine = start([sys.executable, "-c", "import sys; sys.stdin.read()"], env=cluster_env)
        # a normal stop: the watchdog goes, the cluster stays (the workbench stops it itself)
        parent, dog = watched()
        parent.stdin.write("stop\n")
        parent.stdin.flush()
        assert parent.stdout.readline().strip() == str(-signal.SIGKILL)
        assert engine.poll() is None and os.path.exists(segment)
        # the job's end: SIGTERM to the watchdog and to the cluster's process, as Slurm sends them
        parent, dog = watched()
        os.kill(dog, signal.SIGTERM)
        engine.terminate()
        assert _wait(lambda: not processes.alive(dog), 60), "the watchdog ended"
        assert engine.wait(timeout=30) is not None
        assert parent.poll() is None, "the watchdog's parent is not its to end"
        assert not os.path.exists(segment), "the killed rank's segment, named by its footprint, was removed"
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()
        if os.path.exists(segment):
            os.unlink(segment)


#: A process of a cluster that makes world files in /dev/shm as fast as it can (as a rank's MPI
#: start makes its segment at a moment nobody chooses), each held open, none ever removed by it.
MAKER = """
import os, sys
prefix = sys.argv[1]
held = []
while True:
    path = f"{prefix}{len(held)}"
    held.append(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    print(path, flush=True)
"""


def test_the_watchdog_removes_a_file_its_cluster_made_up_to_the_moment_it_was_ended(tmp_path):
    """The watchdog stops the cluster's processes before it reads their files: a file made while
    it ended them (a rank's segment, made during a start) is recorded and removed with the rest."""
    from mpiworkbench.client.cluster import watchdog
    from mpiworkbench.core import shm

    profile, cluster_id = str(tmp_path / "profile_x"), "the-id"
    prefix = os.path.join(shm.SHM_DIR, f"mpich_shm_wbtest{os.getpid()}_")
    maker = subprocess.Popen([sys.executable, "-c", MAKER, prefix], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "IPP_CLUSTER_ID": cluster_id, "IPP_PROFILE_DIR": profile})
    try:
        assert maker.stdout.readline().startswith(prefix), "the cluster's process makes files"
        watchdog.end_cluster(profile, cluster_id)
        assert maker.wait(timeout=60) is not None
        made = [name for name in os.listdir(shm.SHM_DIR) if os.path.join(shm.SHM_DIR, name).startswith(prefix)]
        assert not made, f"{len(made)} file(s) its cluster made were left, e.g. {made[:3]}"
    finally:
        if maker.poll() is None:
            maker.kill()
            maker.wait()
        for name in os.listdir(shm.SHM_DIR):
            if os.path.join(shm.SHM_DIR, name).startswith(prefix):
                os.unlink(os.path.join(shm.SHM_DIR, name))


class _Engine:
    """What :func:`engine_start.connected_before_registered` needs of ipyparallel's ``IPEngine``:
    a registration that connects a shell socket to a queue, then starts the heart."""

    def __init__(self, url: str) -> None:
        self.url, self.log, self.heart_started_after = url, logging.getLogger("test-engine"), None
        self.connecting = threading.Event()

    async def complete_registration(self, msg, connect, maybe_tunnel):
        self.shell = zmq.Context.instance().socket(zmq.ROUTER)
        self.shell.linger = 0
        connect(self.shell, self.url)
        self.connecting.set()
        self.start_heartbeat()

    def start_heartbeat(self):
        self.heart_started_after = getattr(self, "bound", None)


def _free_url() -> str:
    """A loopback endpoint nothing listens on (yet). Found with a plain socket, closed at once:
    a ZeroMQ socket's close is finished later by its context's I/O thread, and a port found
    with one (as it was) could still accept the engine's connection and answer its handshake
    (the unit tier's intermittent failures of the two tests below)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def _register(engine) -> None:
    try:
        asyncio.run(engine.complete_registration({}, lambda sock, url: sock.connect(url), None))
    finally:
        engine.shell.close(linger=0)


def test_an_engines_heart_starts_only_once_its_queues_are_connected():
    # the queue binds only after the engine connected to it (a broadcast scheduler started
    # late): the heart must wait for the handshake, not start at once
    engine_class = type("Engine", (_Engine,), {})  # patched in place: a class of this test's own
    engine_start.connected_before_registered(engine_class, limit_s=60)
    engine = engine_class(_free_url())
    queue = zmq.Context.instance().socket(zmq.ROUTER)
    queue.linger = 0

    def bind_later():
        engine.connecting.wait(60)
        threading.Event().wait(0.5)  # the scenario, not a wait: its first connect is refused, ZeroMQ retries
        engine.bound = True
        queue.bind(engine.url)

    binder = threading.Thread(target=bind_later)
    binder.start()
    try:
        _register(engine)
    finally:
        binder.join()
        queue.close(linger=0)
    assert engine.heart_started_after is True


def test_an_engine_whose_queue_never_comes_starts_its_heart_at_the_limit(caplog):
    engine_class = type("Engine", (_Engine,), {})
    engine_start.connected_before_registered(engine_class, limit_s=0.3, note_s=0.1)
    # a port held, bound but not listening, for the whole test: every connect to it is refused
    # (a port merely free may be bound meanwhile by another test's socket), and a logger of its own
    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 0))
        engine = engine_class(f"tcp://127.0.0.1:{held.getsockname()[1]}")
        engine.log = logging.getLogger(f"test-engine-{id(engine)}")  # a logger no earlier test touched
        engine.bound = "never"
        _register(engine)
    finally:
        held.close()
    assert engine.heart_started_after == "never"
    # said while it waited (what a report of a world that did not come up shows), then at the limit
    assert "still waiting after 0.1 s for 1 of the connections to tcp://127.0.0.1" in caplog.text
    assert "only 0 of the connections to tcp://127.0.0.1" in caplog.text


def test_a_new_ranks_record_drops_those_of_ended_ranks_that_left_nothing_and_keeps_the_rest(tmp_path):
    """Records of earlier worlds (a world restarted for hours) do not pile up: a record goes once its
    process has ended and its files are gone; one naming a file still there stays for the clean-up,
    and a live process's stays."""
    from mpiworkbench.core import shm

    here = socket.gethostname()

    def record(name, pid, started, files):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"pid": pid, "host": here, "started": started, "files": files}))
        return path

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                           text=True, check=True, timeout=60)
    dead = int(ended.stdout)
    left = tmp_path / "still-there"
    left.write_text("")
    finished = record("finished", dead, 1, [str(tmp_path / "gone-already")])
    unfinished = record("unfinished", dead, 1, [str(left)])
    alive = record("alive", os.getpid(), shm.started(os.getpid()), [str(tmp_path / "gone-already")])
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"pid": dead, "host": here + "-other", "started": 1, "files": []}))
    assert shm.drop_finished_records(str(tmp_path)) == [str(finished)]
    assert unfinished.exists() and alive.exists() and elsewhere.exists()
