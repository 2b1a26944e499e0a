"""Signals reach only the process meant: pid *and* start time (and, when asked, its cluster)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from mpiworkbench.core.processes import Identity, end, environ, send, tree


def _sleeper(**env) -> subprocess.Popen:
    """A process that waits on its stdin, returned once it runs (it said so)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, **env})
    assert child.stdout.readline().strip() == "ready"
    return child


def test_a_process_is_signalled_only_while_its_pid_and_start_time_match():
    child = _sleeper(MARK="mine")
    try:
        who = Identity.of(child.pid)
        assert who is not None and who.alive() and environ(child.pid)["MARK"] == "mine"
        # the record of a process that had this pid before (another start time): left alone
        assert not send(Identity(who.pid, who.started - 1), signal.SIGKILL)
        assert not send(who, signal.SIGKILL, belongs=lambda pid: environ(pid).get("MARK") == "other")
        assert child.poll() is None
        assert tree([who]) == [who]
        assert send(who, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
        assert not who.alive() and not send(who, signal.SIGTERM)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_end_terminates_then_kills():
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 "print('ready', flush=True); sys.stdin.read()"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert stubborn.stdout.readline().strip() == "ready"
        end([Identity.of(stubborn.pid)], grace=0.5)
        assert stubborn.wait(timeout=60) == -signal.SIGKILL
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
            stubborn.wait()
