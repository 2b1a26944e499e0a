"""The workbench's controller: ipyparallel's with its schedulers as threads, each broadcast
scheduler given reply and target dicts of its own, its ports claimed
(``mpiworkbench.client.cluster.controller``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ipyparallel.controller.broadcast_scheduler import BroadcastScheduler

from mpiworkbench.client.cluster import controller
from mpiworkbench.client.cluster.start import new_cluster


def test_mended_schedulers_keep_their_own_replies():
    # a subclass standing in for ipyparallel's class, so that the test process's class is left alone
    class Scheduler(BroadcastScheduler):
        accumulated_replies, accumulated_targets = {}, {}  # shared by every instance, as upstream

    controller.mend(Scheduler)
    controller.mend(Scheduler)  # idempotent: not wrapped twice
    root, leaf = Scheduler(), Scheduler()
    root.accumulated_replies["call"] = {b"sub_scheduler_00": None}
    leaf.accumulated_replies["call"] = {b"engine": None}
    assert root.accumulated_replies == {"call": {b"sub_scheduler_00": None}}
    assert leaf.accumulated_replies == {"call": {b"engine": None}}
    assert root.accumulated_targets is not leaf.accumulated_targets
    assert Scheduler.accumulated_replies == {}


def test_a_new_cluster_starts_this_controller_with_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    cluster = new_cluster(2, "test-controller-command")
    assert cluster.config.LocalControllerLauncher.controller_cmd == controller.COMMAND
    assert set(controller.ARGS) <= set(cluster.controller_args)


def test_the_command_runs_ipcontroller_without_importing_the_workbench():
    # the controller's own help, through the command every cluster uses (the file runs by path)
    command = controller.COMMAND
    assert command[:2] == [sys.executable, "-c"]
    code = f"import sys\ntry:\n    {command[2]}\nfinally:\n    print('imported:', 'mpiworkbench' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=120)
    assert "IPController" in done.stdout, done.stderr
    assert "imported: False" in done.stdout


def test_claimed_ports_are_outside_what_the_system_hands_out_and_refused_to_others(tmp_path):
    import socket

    import zmq

    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n")
    assert controller.private_ports(ranges) == range(61000, 65536)
    ranges.write_text("1024\t65535\n")  # the system hands out every port: its own choice, claimed
    assert controller.private_ports(ranges) == range(0)
    assert controller.private_ports(tmp_path / "missing") == range(0)  # (not Linux)

    ports = controller.claim_ports(3, ports=range(61000, 65536))
    system = controller.claim_ports(1, ports=range(0))
    try:
        assert len(set(ports)) == 3 and all(61000 <= port < 65536 for port in ports), ports
        for port in [*ports, *system]:
            other = socket.socket()  # another program taking the port: refused, on any address
            try:
                with pytest.raises(OSError):
                    other.bind(("127.0.0.1", port))
            finally:
                other.close()
            assert controller.claim(port) is None  # another controller's claim: refused
        # the controller's own queue binds the claimed port, and is reached through it
        context = zmq.Context()
        try:
            router, dealer = context.socket(zmq.ROUTER), context.socket(zmq.DEALER)
            router.bind(f"tcp://127.0.0.1:{ports[0]}")
            dealer.connect(f"tcp://127.0.0.1:{ports[0]}")
            dealer.send(b"hello")
            assert router.poll(10_000) and router.recv_multipart()[1] == b"hello"
        finally:
            context.destroy(linger=0)
    finally:
        held = controller._claims[-4:]
        del controller._claims[-4:]
        for sock in held:
            sock.close()
