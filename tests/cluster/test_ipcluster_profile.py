"""`mpiworkbench profile create` then `ipcluster start --profile=NAME` gives MPI engines.

The ``mpi`` profile starts local engines with the mpiexec beside this Python; the ``slurm``
profile submits them as one batch job to a private single-node Slurm (``tests/cluster/slurm.py``).
ipcluster runs in ``tmp_path``: ipyparallel's Slurm launcher writes its batch script into the
current directory.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import uuid

import ipyparallel as ipp
import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.cluster.profiles import create_profile
from tests.cluster.slurm import processes_with_env, slurm, wait_until  # noqa: F401 - fixture
from tests.ipcluster import JOB_MINUTES, LIMIT, IPCluster, _bin

pytestmark = pytest.mark.cost(45)

@ipp.interactive  # resolve globals in the engine's namespace
def _engine_mpi_size():
    return mpi_size  # noqa: F821 - defined on engines started with --mpi


@ipp.interactive  # sent by value: the engines cannot import this module
def _world():
    import os

    from mpi4py import MPI

    return MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size, os.environ.get("SLURM_JOB_ID")


@ipp.interactive  # sent by value: the engines cannot import this module
def _allreduce():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    return comm.allreduce(comm.rank + 1, op=MPI.SUM)


@ipp.interactive  # sent by value: the engines cannot import this module
def _wave_steps():
    from mpiworkbench.solvers.wave.solver import WaveSolver

    solver = WaveSolver(17, kernel="numpy")
    try:
        solver.step(5)
        return solver.steps, float(solver.energy())
    finally:
        solver.close()


def drive_solvers(wb, steps: int) -> None:
    """Step a small wave solver and run a CG solve to convergence on *wb*'s engines."""
    w = wb.wave(mesh=17)
    try:
        w.step(steps)
        assert w.steps == steps and math.isfinite(w.error())
    finally:
        w.close()
    c = wb.cg(mesh=17)
    try:
        assert c.run()["status"] == "converged"
    finally:
        c.close()


def test_ipcluster_starts_local_mpi_engines_from_the_mpi_profile(tmp_path):
    ipython_dir = tmp_path / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    ipcluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    client = None
    try:
        client = ipcluster.start(2)
        assert sorted(r[:2] for r in client[:].apply_sync(_world)) == [(0, 2), (1, 2)]
        assert client[:].apply_sync(_engine_mpi_size) == [2, 2]
        assert client[:].apply_sync(_allreduce) == [3, 3]
    finally:
        if client is not None:
            client.close()
        ipcluster.stop()


@pytest.mark.parametrize("encrypt", [False, True], ids=["signed", "encrypted"])
def test_a_client_without_the_connection_files_key_gets_nothing_executed(tmp_path, monkeypatch, encrypt):
    ipython_dir = tmp_path / "ipython"
    profile = create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir, encrypt=encrypt)
    assert ("c.IPController.enable_curve = True" in (profile / "ipcontroller_config.py").read_text()) is encrypt
    ipcluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    client = None
    try:
        client = ipcluster.start(2)
        security = ipython_dir / "profile_mpi" / "security"
        for name in ("ipcontroller-client.json", "ipcontroller-engine.json"):
            assert (security / name).stat().st_mode & 0o077 == 0, f"{name} is readable by others"
        facts = json.loads((security / "ipcontroller-client.json").read_text())
        assert bool(facts.get("curve_serverkey")) is encrypt and (facts["key"] == "") is encrypt
        # the same file with another key: what anyone on the network without the file has
        forged = {**facts, **({"curve_serverkey": _other_curve_key()} if encrypt else {"key": uuid.uuid4().hex})}
        (tmp_path / "forged.json").write_text(json.dumps(forged))
        marker = tmp_path / "executed"
        with pytest.raises(TimeoutError):  # the controller never answers it
            stranger = ipp.Client(str(tmp_path / "forged.json"), timeout=5)
            try:
                stranger[:].apply_sync(_touch, str(marker))
            finally:
                stranger.close()
        # ... while the key's holder is served: the workbench attaches and computes
        monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
        wb = Workbench.attach(profile="mpi", activate=False)
        try:
            assert wb.run(_allreduce) == [3, 3]
        finally:
            wb.stop()
        assert not marker.exists(), "the forged client got something executed"
    finally:
        if client is not None:
            client.close()
        ipcluster.stop()


def _other_curve_key() -> str:
    import zmq

    return zmq.curve_keypair()[0].decode("ascii")


def _touch(path: str) -> None:
    open(path, "w").close()


@ipp.interactive  # sent by value: the engines cannot import this module
def _traced() -> bool:
    from mpiworkbench.trace import recorder

    return recorder.available()


def test_ipcluster_runs_the_slurm_profile_as_one_slurm_job(slurm, tmp_path, monkeypatch):
    ipython_dir = tmp_path / "ipython"
    name = f"slurm-{uuid.uuid4().hex[:8]}"
    env = {**slurm.env, "IPYTHONDIR": str(ipython_dir),
           "SBATCH_TIMELIMIT": JOB_MINUTES}  # sbatch's --time from the environment
    created = subprocess.run([_bin("mpiworkbench"), "profile", "create", f"--name={name}", "--launcher=slurm"],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT)
    assert created.returncode == 0, created.stderr
    ipcluster = IPCluster(name, ipython_dir, tmp_path, env)
    client = None
    job = None
    try:
        client = ipcluster.start(2)
        jobs = slurm.jobs()
        assert len(jobs) == 1, f"one batch job holds all engines; squeue has {jobs}"
        job = jobs[0]
        limit = slurm.run("squeue", "--noheader", f"--jobs={job}", "--format=%l").stdout.strip()
        assert limit == f"{JOB_MINUTES}:00", f"the engines' job has a wall-clock limit; squeue says {limit!r}"
        world = sorted(client[:].apply_sync(_world))
        assert world == [(0, 2, job), (1, 2, job)], "ranks 0 and 1 of one world, both in the job"
        assert client[:].apply_sync(_engine_mpi_size) == [2, 2]
        assert client[:].apply_sync(_allreduce) == [3, 3]
        try:
            from mpiworkbench.solvers.wave.solver import WaveSolver  # noqa: F401
        except ImportError:
            pass
        else:  # a small distributed solve across the job's two ranks
            (steps0, energy0), (steps1, energy1) = client[:].apply_sync(_wave_steps)
            assert steps0 == steps1 == 5
            assert energy0 == energy1 and energy0 > 0
        assert not list(tmp_path.glob("*.sbatch")), "no batch script in ipcluster's working directory"
        assert (ipython_dir / f"profile_{name}" / "log" / "slurm_engine.sbatch").exists(), "it is in the profile's log/"
        assert client[:].apply_sync(_traced) == [True, True], "the ranks run with the MPI interposer (traces)"
        # the user's path: a workbench attaches to the Slurm-launched engines and drives solvers
        # from the notebook's directory, which nothing may write into (ipyparallel's batch
        # launchers, restored from the cluster file, used to create log/ there)
        for variable, value in env.items():  # the notebook's Slurm is the cluster's
            if os.environ.get(variable) != value:
                monkeypatch.setenv(variable, value)
        notebooks = tmp_path / "notebooks"
        notebooks.mkdir()
        monkeypatch.chdir(notebooks)
        wb = Workbench.attach(profile=name, activate=False)
        try:
            assert wb.launcher == "slurm" and wb.n == 2 and not wb.owns_cluster
            drive_solvers(wb, steps=3)
            wb.restart()  # a new batch job, submitted from this process
            assert len(set(wb.run(os.getpid))) == 2
            assert wb.state == "running", (wb.state, wb.clients())
            assert not list(notebooks.iterdir()), f"left in the notebook's directory: {list(notebooks.iterdir())}"
        finally:
            assert "detached" in wb.stop()
        jobs = slurm.jobs()
        assert len(jobs) == 1 and jobs != [job], f"the restart replaced job {job} by one job; squeue has {jobs}"
        job = jobs[0]  # detaching left it running: ipcluster stop ends it
    finally:
        if client is not None:
            client.close()
        ipcluster.stop()
        if job is None:  # started but never seen: cancel whatever this test submitted
            slurm.cancel_all()
        slurm.wait_for_no_jobs()
        if job is not None:
            wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={slurm.conf}"),
                       f"the processes of job {job} to end", LIMIT)
