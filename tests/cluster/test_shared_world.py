"""One MPI world, many notebooks (issue 20): three client processes attached to one
``ipcluster``-started cluster run MPI work at once — random collectives with random pauses,
a wave panel's Play, a benchmark sweep — and every result is right; a world left blocked by
one of them answers another's attach at once, and a restart from there is told to the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.errors import WorldBlocked
from mpiworkbench.client.cluster.profiles import create_profile
from mpiworkbench.core import shm
from tests.cluster.slurm import wait_until
from tests.ipcluster import LIMIT, IPCluster
from tests.process_tree import settled, world_files

pytestmark = pytest.mark.cost(120, (
                         "three notebook processes on one ipcluster-started world, at 2 and 3 ranks, and a "
                         "blocked world restarted from another notebook"))

ROOT = Path(__file__).resolve().parents[2]
#: Random collectives per client process.
CALLS = 150


@pytest.fixture(params=[2, 3], ids=["2ranks", "3ranks"])
def ipcluster_mpi(request, tmp_path, monkeypatch):
    """``ipcluster start -n N --profile=mpi`` in a private IPython directory."""
    ipython_dir = tmp_path / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    ipcluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    ipcluster.start(request.param).close()
    ipcluster.n = request.param
    yield ipcluster
    ipcluster.stop()


def _client(role: str, seed: int = 0, calls: int = CALLS, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.cluster.shared_client", role, str(seed), str(calls)],
                            cwd=ROOT, env=dict(os.environ), text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, **popen)


def _last_json(out: str) -> dict:
    return json.loads([line for line in out.splitlines() if line.startswith("{")][-1])


def test_three_notebooks_share_one_world_without_deadlock(ipcluster_mpi):
    clients = [_client("collectives", 1), _client("play", 2), _client("bench", 3)]
    results = []
    for process in clients:
        try:
            out, err = process.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            for p in clients:
                p.kill()
                p.communicate()
            raise AssertionError("a client did not finish: the shared world deadlocked") from None
        assert process.returncode == 0, f"{process.args[3]} failed:\n{out}\n{err[-3000:]}"
        results.append(_last_json(out))
    n = ipcluster_mpi.n
    for result in results:
        assert result["n"] == n and result["calls"] == CALLS and result["wrong"] == []
    play = results[1]
    assert play["frames"] == 40 and play["wave_steps"] > 40 and play["wave_error"] < 1e-3
    assert results[2]["bench_rows"] > 0


def test_a_blocked_world_answers_an_attach_at_once_and_its_notebook_learns_of_the_restart(ipcluster_mpi):
    blocker = _client("block", stdin=subprocess.PIPE)
    try:
        seen = json.loads(blocker.stdout.readline())
        assert "MPI_" in seen["timeout"] and "this call came from shared_client.py" in seen["timeout"]
        assert seen["state"] == "blocked"

        t0 = time.perf_counter()
        wb = Workbench.attach(profile="mpi", activate=False, timeout=20)
        attached_s = time.perf_counter() - t0
        try:
            assert attached_s < 20, f"attaching to a blocked world took {attached_s:.1f} s"
            assert wb.state == "blocked" and sorted(wb.ranks.values()) == list(range(ipcluster_mpi.n))
            blocked = [c for c in wb.clients() if c["state"] == "blocked"]
            assert [c["pid"] for c in blocked] == [blocker.pid] and "receive_nothing" in blocked[0]["label"]
            with pytest.raises(WorldBlocked, match="shared_client.py") as caught:
                wb.run(os.getpid)
            assert "tag=4242" in str(caught.value), "the holder's hang report comes with the refusal"

            # ipcluster tears its cluster down when its engines stop in their first 30 s
            wait_until(lambda: "Engines appear to have started successfully"
                       in ipcluster_mpi.log.read_text(errors="replace"), "ipcluster to consider its engines started", LIMIT)
            # the files the live processes use now (the blocked world's, and those of any other
            # MPI job running meanwhile): not what earlier jobs on this machine left behind
            old_world = shm.in_use(world_files())
            wb.restart()  # blocked work does not need force: the restart is what it needs
            assert wb.state == "running" and len(set(wb.run(os.getpid))) == ipcluster_mpi.n
            # the killed ranks' files in /dev/shm went with them (the blocked ones never
            # answered: they were found below the cluster's mpiexec)
            assert settled(lambda: sorted(path for path in old_world - shm.in_use(old_world)
                                          if os.path.lexists(path))) == []

            blocker.stdin.write("go\n")
            blocker.stdin.flush()
            after = json.loads(blocker.stdout.readline())
            assert "restarted by" in after["told"] and "everything this notebook had on the ranks" in after["told"]
            n = ipcluster_mpi.n
            assert after["again"] == [n + n * (n - 1) // 2] * n and after["state"] == "running"
        finally:
            wb.stop()
        blocker.stdin.close()
        assert blocker.wait(LIMIT) == 0, blocker.stderr.read()[-3000:]
    finally:
        if blocker.poll() is None:
            blocker.kill()
            blocker.wait(LIMIT)
        for stream in (blocker.stdout, blocker.stderr):
            stream.close()
