"""The workbench's controller: ipyparallel's with its schedulers as threads, each broadcast
scheduler given reply and target dicts of its own (``mpiworkbench.client.cluster.controller``)."""

from __future__ import annotations

import subprocess
import sys

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
