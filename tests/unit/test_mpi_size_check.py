"""A launcher and a library that do not belong together are refused, and a job under each
installed MPI implementation leaves nothing behind in /dev/shm or the temporary directory —
not even when one of its ranks is killed (issue 22, point 5).

Jobs are started with ``python -m mpiworkbench.core.launch`` (:func:`mpiworkbench.core.launch.run`),
as ``make test-mpi`` runs the MPI tier under Open MPI and Intel MPI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mpiworkbench.core import implementations, launch, shm
from mpiworkbench.trace import library

pytestmark = pytest.mark.skipif(not os.path.isdir(shm.SHM_DIR) or not os.path.isdir("/proc"),
                                reason="needs Linux /dev/shm and /proc")

#: Seconds any one job here may take (a loaded machine; each takes 1-3 s alone).
JOB_TIMEOUT_S = 120

INSTALLED = [impl.name for impl in implementations.REGISTRY if impl.installed()]

SIZE = """
from mpiworkbench.core import mpi
print(f"world of {mpi.world().size}", flush=True)  # one write: the ranks share the pipe
"""

#: Two ranks talk through shared memory; each writes down what it holds (its footprint, taken
#: again after the traffic, the launcher's session directory it was given and the files its
#: parent, the launcher's proxy, holds: MPICH's topology file); then rank 1
#: is killed with SIGKILL (it removes nothing) while rank 0 waits for it.
KILLED = """
import json, os, signal, sys
import numpy as np
from mpiworkbench.core import mpi, shm
comm = mpi.world()
a = np.ones(1 << 17); b = np.empty_like(a)
comm.Allreduce(a, b)
shm.record_footprint()
record = {**shm.footprint(), "session": os.environ.get("PMIX_SERVER_TMPDIR"),
          "launcher": shm.launcher_files(os.getppid())}
path = os.path.join(sys.argv[1], f"rank{comm.rank}.json")
with open(path + ".part", "w") as out:  # whole or not at all: the test reads it as soon as it is there
    json.dump(record, out)
os.replace(path + ".part", path)
comm.Barrier()
if comm.rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
comm.Barrier()
"""


def _run(impl: str, script: str, *args: str, timeout_s: float = JOB_TIMEOUT_S, interposer: bool = False):
    """``python -m mpiworkbench.core.launch --mpi IMPL -n 2 -- python -c SCRIPT ARGS``."""
    mpi_args = library.mpiexec_args(implementations.get(impl)) if interposer else []
    return subprocess.run(
        [sys.executable, "-m", "mpiworkbench.core.launch", "--mpi", impl, "-n", "2", "--timeout", str(timeout_s),
         *mpi_args, "--", sys.executable, "-c", script, *args],
        capture_output=True, text=True, timeout=timeout_s + launch.LIMIT_GRACE_S + 30)


@pytest.mark.parametrize("impl", INSTALLED)
def test_the_right_launcher_and_library_make_one_world(impl):
    proc = _run(impl, SIZE)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("world of 2") == 2


@pytest.mark.skipif("openmpi" not in INSTALLED, reason="Open MPI is not installed (make test installs it)")
def test_open_mpis_library_under_mpichs_mpiexec_is_refused_with_the_reason(tmp_path):
    # each rank is a singleton of Open MPI: two worlds of 1 where 2 ranks were asked for
    env = implementations.get("openmpi").apply(os.environ)
    env[implementations.SIZE_VARIABLE] = "2"
    env[shm.FOOTPRINT_DIR_VARIABLE] = str(tmp_path)
    mpich = implementations.get("mpich")
    try:
        proc = subprocess.run([launch.find_mpiexec(mpich), "-n", "2", sys.executable, "-c", SIZE],
                              env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    finally:  # an Open MPI singleton leaves its 16 MiB segment in /dev/shm
        records = shm.read_footprints(str(tmp_path))
        launch.remove_left_behind(str(tmp_path))
    assert proc.returncode != 0
    assert "world of" not in proc.stdout
    assert ("asked for 2 MPI ranks, but this rank's MPI_COMM_WORLD has 1: the launcher (mpiexec) "
            "and the MPI library (openmpi) do not belong together") in proc.stderr
    assert len(records) == 2
    left = [path for record in records for path in record["files"] if os.path.lexists(path)]
    assert not left, f"the singletons' files stayed: {left}"


def _names() -> set[str]:
    found = set()
    for directory in (shm.SHM_DIR, tempfile.gettempdir()):
        try:
            found |= {os.path.join(directory, name) for name in os.listdir(directory)}
        except OSError:
            pass
    return found


@pytest.mark.parametrize("impl", INSTALLED)
def test_a_job_with_a_killed_rank_leaves_nothing_in_dev_shm_or_tmp(impl, tmp_path):
    before = _names()
    proc = _run(impl, KILLED, str(tmp_path), interposer=True)
    assert proc.returncode != 0, "a killed rank fails the job"
    ranks = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
    assert len(ranks) == 2, proc.stderr
    # what the job's processes made: the files its ranks held (the library's segments, the
    # interposer's files named after each rank) and the launcher's session directory
    made = {path for rank in ranks for path in rank["files"]}
    made |= {path for rank in ranks for path in (*shm.own_files(rank["pid"]), *rank["launcher"])}
    made |= {rank["session"] for rank in ranks if rank["session"]}
    assert made - before, "the ranks held no files: nothing was checked"
    left = sorted(path for path in made if os.path.lexists(path))
    assert not left, f"{impl}: the job left {left}"
    assert all(shm.gone(rank) for rank in ranks), "no rank outlives the job"


def test_a_job_that_outlives_its_limit_is_ended_with_all_its_ranks(tmp_path):
    # MPICH's Hydra ends a job at MPIEXEC_TIMEOUT; the launcher then removes what is left
    hang = KILLED.replace("os.kill(os.getpid(), signal.SIGKILL)", "import time; time.sleep(600)")
    proc = _run("mpich", hang, str(tmp_path), timeout_s=6)  # the ranks start well within it
    assert proc.returncode != 0
    ranks = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
    assert len(ranks) == 2 and all(shm.gone(rank) for rank in ranks), proc.stderr
    made = [path for rank in ranks for path in (*rank["files"], *rank["launcher"])]
    assert made and not [path for path in made if os.path.lexists(path)], (ranks, proc.stderr)


@pytest.mark.parametrize("impl", [name for name in ("openmpi", "mpich") if name in INSTALLED][:1])
def test_a_terminated_launcher_ends_every_rank_and_removes_their_files(impl, tmp_path):
    # Open MPI's prterun puts each rank in a process group of its own: no killpg reaches them
    import signal
    import time

    hang = KILLED.replace("os.kill(os.getpid(), signal.SIGKILL)", "import time; time.sleep(600)")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "mpiworkbench.core.launch", "--mpi", impl, "-n", "2", "--timeout", "100",
         *library.mpiexec_args(implementations.get(impl)), "--", sys.executable, "-c", hang, str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while len(list(tmp_path.glob("rank*.json"))) < 2 and launcher.poll() is None:
            assert time.monotonic() < deadline, "the ranks never started"
            time.sleep(0.05)
        ranks = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(JOB_TIMEOUT_S) == 128 + signal.SIGTERM
    finally:
        if launcher.poll() is None:  # a failed step above: the launcher still removes what its ranks made
            launcher.terminate()
            try:
                launcher.wait(JOB_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                launcher.kill()
                launcher.wait()
    assert len(ranks) == 2 and all(shm.gone(rank) for rank in ranks), "every rank was ended"
    made = {path for rank in ranks for path in (*rank["files"], *shm.own_files(rank["pid"]), *rank["launcher"])}
    made |= {rank["session"] for rank in ranks if rank["session"]}
    assert made and not [path for path in made if os.path.lexists(path)]


def test_the_entry_point_says_how_to_use_it():
    proc = subprocess.run([sys.executable, "-m", "mpiworkbench.core.launch", "-n", "2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "usage: python -m mpiworkbench.core.launch" in proc.stderr
    with pytest.raises(ValueError, match="unknown MPI implementation 'lam'"):
        launch.main(["--mpi", "lam", "-n", "2", "--", "true"])
    assert Path(launch.__file__).exists()
