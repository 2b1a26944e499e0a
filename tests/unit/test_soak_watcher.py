"""The soak's watcher tells a rank from a rank's child, also once the rank is gone.

A restart kills a world's ranks first; their nannies (children, with the rank's environment)
live on for a moment, reparented to the launcher (a subreaper below the client). Read as
ranks, they made a world of their own: a death the soak reported that never happened (CI,
stop 45). Here a stand-in client (a subreaper) starts a stand-in rank (``PMI_RANK`` set) that
starts a child with the same environment; the rank is killed and the child stays.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mpiworkbench.core.processes import Identity
from tests.cluster.test_soak import soak_module

#: A client that is a subreaper: starts the rank, prints its pid, waits to be ended.
CLIENT = textwrap.dedent("""
    import ctypes, os, subprocess, sys, time
    assert ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    env = dict(os.environ, PMI_RANK="0")
    rank = subprocess.Popen([sys.executable, "-c", *sys.argv[1:]], env=env, stdout=subprocess.PIPE, text=True)
    print(rank.pid, rank.stdout.readline().strip(), flush=True)
    while True:
        try:
            os.waitpid(-1, 0)  # reap the rank, and the orphan once it ends
        except ChildProcessError:
            time.sleep(0.05)
""")
#: A rank: starts a child (it inherits PMI_RANK; its command line ends with the rank's
#: arguments), prints the child's pid, sleeps.
RANK = textwrap.dedent("""
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *sys.argv[1:]])
    print(child.pid, flush=True)
    time.sleep(600)
""")
#: Limit (s) for a condition awaited below.
WAIT_S = 30


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT_S
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {WAIT_S} s: {what}")
        time.sleep(0.05)
    return value


@pytest.fixture
def client(request):
    process = subprocess.Popen([sys.executable, "-c", CLIENT, RANK, *getattr(request, "param", ())],
                               stdout=subprocess.PIPE, text=True)
    try:
        rank, child = (int(pid) for pid in process.stdout.readline().split())
        yield process, rank, child
    finally:
        for pid in (locals().get("child"), locals().get("rank")):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        process.kill()
        process.wait(timeout=WAIT_S)


def test_a_ranks_child_left_behind_is_no_rank(client):
    soak = soak_module()
    process, rank, child = client
    known: set = set()
    groups = soak.process_groups({0: process.pid}, known)
    assert [p.pid for p in groups["rank 0"]] == [rank]
    assert child in [p.pid for p in groups["launch"]]
    assert Identity.of(child) in known

    os.kill(rank, signal.SIGKILL)
    wait_for(lambda: Identity.of(rank) is None, f"the rank (pid {rank}) gone")
    orphan = wait_for(lambda: [p for p in soak.process_groups({0: process.pid}, set()).get("rank 0", [])],
                      f"the child (pid {child}) reparented to the client")
    assert [p.pid for p in orphan] == [child], "without the memory, the orphan reads as a rank"

    groups = soak.process_groups({0: process.pid}, known)
    assert "rank 0" not in groups, "with it, the orphan is a launch process"
    assert child in [p.pid for p in groups["launch"]]


@pytest.mark.parametrize("client", [("ipyparallel.engine.nanny",)], indirect=True)
def test_a_nanny_left_behind_is_no_rank_even_unseen_before(client):
    soak = soak_module()
    process, rank, child = client
    assert soak.NANNY == "ipyparallel.engine.nanny"
    os.kill(rank, signal.SIGKILL)
    wait_for(lambda: Identity.of(rank) is None, f"the rank (pid {rank}) gone")
    groups = wait_for(lambda: (g := soak.process_groups({0: process.pid}, set())) and
                      child in [p.pid for p in g.get("launch", [])] and g,
                      f"the nanny (pid {child}) reparented to the client")
    assert "rank 0" not in groups
