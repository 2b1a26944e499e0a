"""A cluster the session started whose engines do not all register says so, with what its
``mpiexec`` did and the engines' last output — not that the ranks are busy with someone's work
(nobody else has sent any). Stand-ins for ipyparallel's cluster, launcher and client."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from types import SimpleNamespace

import psutil
import pytest

from mpiworkbench.client.cluster import health
from mpiworkbench.client.calls.connection import Connection
from mpiworkbench.client.errors import EnginesNotStarted, WorldBusy


class Client:
    """Registers *registered* engines, then times out waiting for the rest as ipyparallel's does
    (its future raises ``TimeoutError`` once its deadline passed; here, *after_s* seconds)."""

    def __init__(self, registered: int, after_s: float = 0.0):
        self.ids = list(range(registered))
        self.after_s = after_s

    def wait_for_engines(self, n, *, timeout=-1, block=True, interactive=None):
        future = Future()
        self.timer = threading.Timer(self.after_s, future.set_exception, [TimeoutError(
            f"{n} engines not ready in {timeout} seconds. Currently ready: {len(self.ids)}")])
        self.timer.daemon = True
        self.timer.start()
        return future.result() if block else future


@pytest.fixture
def ended(tmp_path):
    """A launcher whose mpiexec has ended, with an output file of 40 lines."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    found = psutil.Process(process.pid)
    process.wait(timeout=60)
    output = tmp_path / "engines.log"
    output.write_text("".join(f"line {k}\n" for k in range(40)))
    return SimpleNamespace(process=found, output_file=str(output), stop_data={"exit_code": 9})


@pytest.fixture
def running(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield SimpleNamespace(process=psutil.Process(process.pid), output_file=str(tmp_path / "absent.log"))
    finally:
        process.kill()
        process.wait(timeout=60)


def test_the_report_says_each_launchers_state_and_its_last_lines(ended, running):
    cluster = SimpleNamespace(engines={"a": ended, "b": running, "c": SimpleNamespace(output_file=None)})
    text = health.launcher_report(cluster, lines=3)
    assert f"engine set a: mpiexec (pid {ended.process.pid}) ended with 9; its last output:" in text
    assert "line 37\n    line 38\n    line 39" in text and "line 36" not in text
    assert f"engine set b: mpiexec (pid {running.process.pid}) running; no output" in text
    assert "engine set c: no local process (a batch job); no output" in text
    assert health.launcher_report(SimpleNamespace(engines={})) == "no engine set was started"


def test_the_report_names_the_controllers_errors(ended, running, tmp_path):
    # a queue's thread that died at its start: the engines wait for it, the controller lives on
    log = tmp_path / "controller.log"
    log.write_text("[IPController] Hub listening on tcp://127.0.0.1:61001 for registration.\n"
                   "Exception in thread Thread-1 (run):\nTraceback (most recent call last):\n"
                   '  File "basedevice.py", line 220, in _setup_sockets\n'
                   "zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:37971')\n"
                   "[IPController] client::client b'x' requested 'connection_request'\n")
    controller = SimpleNamespace(process=running.process, output_file=str(log))
    text = health.launcher_report(SimpleNamespace(engines={"a": ended}, controller=controller), lines=3)
    assert text.endswith(f"controller (pid {running.process.pid}) running; the errors in its output:\n"
                         "    Exception in thread Thread-1 (run):\n"
                         "    Traceback (most recent call last):\n"
                         "    zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:37971')"), text
    assert "line 39" in text  # the engines' lines first
    log.write_text("[IPController] Hub listening on tcp://127.0.0.1:61001 for registration.\n")
    quiet = health.launcher_report(SimpleNamespace(engines={}, controller=controller))
    assert quiet == ("no engine set was started\n"
                     f"controller (pid {running.process.pid}) running; no error in its output")


@pytest.mark.parametrize("registered", [0, 2])
def test_an_own_cluster_whose_engines_did_not_register_says_so(running, registered):
    connection = Connection(SimpleNamespace(engines={"a": running}), owns_cluster=True, client=Client(registered))
    with pytest.raises(EnginesNotStarted) as caught:
        connection.ask_engines(3, 60, restarted=False, thread_level=None, mpi="mpich")
    message = str(caught.value)
    assert message.startswith(f"{registered} of the 3 engines registered with the controller within 60 s")
    assert "running; no output" in message
    assert "busy" not in message


@pytest.mark.parametrize("registered", [0, 2])
def test_an_own_cluster_whose_launcher_ended_says_so_at_once(ended, registered):
    """Engines that refused at their start (two MPIs in a rank): their launcher's end is seen, and
    said with their last words, without waiting for the engines' time-out."""
    client = Client(registered, after_s=600)
    connection = Connection(SimpleNamespace(engines={"a": ended}), owns_cluster=True, client=client)
    began = time.monotonic()
    with pytest.raises(EnginesNotStarted) as caught:
        connection.ask_engines(3, 600, restarted=False, thread_level=None, mpi="mpich")
    client.timer.cancel()
    message = str(caught.value)
    assert message.startswith(f"{registered} of the 3 engines registered before their launcher ended.")
    assert "ended with 9" in message and "line 39" in message
    assert time.monotonic() - began < 60


def test_an_attached_cluster_still_says_busy(ended):
    connection = Connection(SimpleNamespace(engines={"a": ended}), owns_cluster=False, client=Client(0))
    with pytest.raises(WorldBusy, match="did not answer within 60 s"):
        connection.ask_engines(3, 60, restarted=False, thread_level=None, mpi="mpich")
