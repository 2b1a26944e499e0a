"""A batch job on the private Slurm runs the CLI as one MPI world of the job's two tasks,
started by the mpiexec beside this Python (MPICH's Hydra, inside the allocation) or by srun
(Slurm's PMI-2 server, which the mpich wheel's library speaks). ``--np 2`` inside the job
means "check the world I run in has 2 ranks", not "start mpiexec"."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

from tests.cluster.slurm import processes_with_env, slurm, wait_until  # noqa: F401 - fixture

LIMIT = 180  # seconds; a generous bound on the job (its own --time is shorter than Slurm's MaxTime)


@pytest.mark.parametrize("starter", ["mpiexec", "srun"])
def test_sbatch_runs_the_info_command_on_two_ranks(slurm, tmp_path, starter):
    python = sys.executable
    start = {"mpiexec": f"{shlex.quote(str(Path(python).with_name('mpiexec')))} -n 2",
             "srun": "srun --mpi=pmi2 --ntasks=2"}[starter]
    info = tmp_path / "info.json"
    out = tmp_path / "job.out"
    script = tmp_path / "info.sbatch"
    script.write_text(
        "#!/bin/sh\n"
        "#SBATCH --job-name=mpiwb-info\n"
        "#SBATCH --ntasks=2\n"
        "#SBATCH --time=5\n"
        f"#SBATCH --output={out}\n"
        f"export MPIEXEC_TIMEOUT={int(os.environ.get('MPIEXEC_TIMEOUT', '600'))}\n"
        f"exec {start} {shlex.quote(python)} -m mpiworkbench info --np 2 --json {shlex.quote(str(info))}\n"
    )
    submitted = slurm.run("sbatch", "--parsable", str(script), cwd=tmp_path)
    job = submitted.stdout.strip().split(";")[0]
    try:
        wait_until(lambda: slurm.job_state(job) not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING"),
                   f"job {job} to finish", LIMIT,
                   diagnose=lambda: out.read_text(errors="replace") if out.exists() else slurm.diagnose())
        state = slurm.job_state(job)
        log = out.read_text(errors="replace") if out.exists() else "(no job output)"
        assert state in ("COMPLETED", "GONE"), f"job {job} ended {state}\n{log}"
        facts = json.loads(info.read_text())
        assert facts["np"] == 2, log
    finally:
        if slurm.job_state(job) not in ("COMPLETED", "GONE", "FAILED", "CANCELLED", "TIMEOUT"):
            slurm.run("scancel", job, check=False)
        slurm.wait_for_no_jobs()
        wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={slurm.conf}"),
                   f"the processes of job {job} to end", LIMIT)
