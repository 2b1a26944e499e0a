"""`mpiworkbench profile create` then `ipcluster start --profile=NAME` gives MPI engines.

The ``slurm`` profile is run against a stand-in ``sbatch`` that starts the job script at once
(every process of the job marked by an environment variable, as a cgroup would hold them) and a
stand-in ``scancel`` that ends them all: what is tested is our batch template (one job, one
mpiexec, one MPI world), not Slurm.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from pathlib import Path

import ipyparallel as ipp
import pytest

from mpiworkbench.client.profile import create_profile
def _ipcluster(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("ipcluster")), *args]


def _engines_recorded(cluster_file: Path) -> bool:
    """Whether ipcluster has finished writing a cluster file that records its engines."""
    try:
        data = json.loads(cluster_file.read_text())
    except (OSError, ValueError):  # not there yet, or caught half-written
        return False
    return bool((data.get("engines") or {}).get("sets"))


@ipp.interactive  # resolve globals in the engine's namespace
def _engine_mpi_size():
    return mpi_size  # noqa: F821 - defined on engines started with --mpi


SBATCH = """\
    import os, random, subprocess, sys
    script, job = sys.argv[-1], random.randrange(10**5, 10**6)
    env = {**os.environ, "FAKE_SLURM_JOB_ID": str(job)}  # marks every process of the job, as a cgroup would
    with open(script + ".out", "ab") as log:
        subprocess.Popen(["/bin/sh", script], stdout=log, stderr=log, start_new_session=True, env=env)
    with open(os.environ["FAKE_SLURM_JOBS"], "a") as jobs:
        jobs.write(f"{job}\\n")
    print(f"Submitted batch job {job}")
"""
#: Like Slurm's scancel: signal every process of the job; without -s, SIGTERM, then SIGKILL to
#: what is still there after KillWait (30 s here), and return once the job is gone.
SCANCEL = """\
    import os, signal, sys, time
    def job_processes(job):
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    if f"FAKE_SLURM_JOB_ID={job}".encode() in fh.read().split(b"\\0"):
                        found.append(int(pid))
            except OSError:
                pass
        return found
    def kill(pids, sig):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
    args = sys.argv[1:]
    if args[0] == "-s":
        name = args[1]
        sig = int(name) if name.isdigit() else getattr(signal, name if name.startswith("SIG") else "SIG" + name)
        kill(job_processes(args[2]), sig)
        sys.exit(0)
    job = args[0]
    kill(job_processes(job), signal.SIGTERM)
    deadline = time.monotonic() + 30
    while job_processes(job) and time.monotonic() < deadline:
        time.sleep(0.1)
    kill(job_processes(job), signal.SIGKILL)
"""


_PR_SET_CHILD_SUBREAPER = 36


def _subreaper(on: bool) -> None:
    """Adopt (or stop adopting) orphaned descendants: the stand-in job outlives the stand-in
    sbatch, and on this machine nobody else would reap it when it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)


def _children() -> dict[int, str]:
    """This process's children and their states (from /proc)."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as fh:
                state, ppid = fh.read().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if int(ppid) == os.getpid():
            found[int(pid)] = state
    return found


def _stand_in_slurm(tmp_path: Path) -> dict[str, str]:
    """``sbatch``/``scancel`` stand-ins first on PATH; the environment that uses them."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("sbatch", SBATCH), ("scancel", SCANCEL)):
        tool = bin_dir / name
        tool.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        tool.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "FAKE_SLURM_JOBS": str(tmp_path / "jobs")}


@pytest.mark.parametrize("launcher", ["mpi", "slurm"])
def test_ipcluster_starts_mpi_engines_from_the_profile(tmp_path, launcher):
    ipython_dir = tmp_path / "ipython"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the slurm profile warns that its controller is on loopback
        create_profile(launcher, launcher=launcher, ipython_dir_=ipython_dir)
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir)}
    known_children = set(_children())
    if launcher == "slurm":
        env.update(_stand_in_slurm(tmp_path))
        _subreaper(True)
    cluster_id = f"test-{uuid.uuid4().hex[:6]}"
    common = [f"--profile={launcher}", f"--cluster-id={cluster_id}"]
    server = subprocess.Popen(_ipcluster("start", "-n", "2", *common), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        profile_dir = str(ipython_dir / f"profile_{launcher}")
        cluster_file = Path(profile_dir) / "security" / f"cluster-{cluster_id}.json"
        deadline = 120
        start = time.monotonic()
        while not _engines_recorded(cluster_file):  # the condition: ipcluster wrote its cluster file
            assert server.poll() is None, "ipcluster exited early"
            assert time.monotonic() - start < deadline, "ipcluster did not come up"
            time.sleep(0.1)
        cluster = ipp.Cluster.from_file(str(cluster_file))
        client = cluster.connect_client_sync()
        client.wait_for_engines(2, timeout=120)

        def world():
            from mpi4py import MPI

            return MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size

        by_engine = client[:].apply_sync(world)
        assert sorted(by_engine) == [(0, 2), (1, 2)]
        assert client[:].apply_sync(_engine_mpi_size) == [2, 2]
        if launcher == "slurm":  # the engines came from one batch job
            assert len((tmp_path / "jobs").read_text().split()) == 1
    finally:
        if client is not None:
            client.close()
        subprocess.run(_ipcluster("stop", *common), env=env, check=False, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if launcher == "slurm":  # ipcluster stop ran scancel; again here (it returns once the job is gone)
            jobs = tmp_path / "jobs"
            for job in jobs.read_text().split() if jobs.exists() else []:
                subprocess.run([str(tmp_path / "bin" / "scancel"), job], check=True, timeout=60)
            for pid, state in _children().items():  # the job's processes we adopted, all ended now
                if state == "Z" and pid not in known_children:
                    os.waitpid(pid, 0)
            _subreaper(False)


