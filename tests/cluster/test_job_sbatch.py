"""A notebook session's MPI work saved as a job (``wb.export_job``) and submitted with ``sbatch``
on the simulated nodes (``tests/multinode.py``: head and two compute nodes of two Slurm CPUs each),
across both nodes, under each MPI path a session can have:

* the ``mpich`` wheel (the venv's own): the job's ``mpiworkbench job run`` starts the ranks with
  its ``mpiexec`` inside the allocation (``MPIWORKBENCH_LAUNCHER=mpiexec`` in ``job.sbatch``);
* the site's MPI (Debian's Open MPI, a venv whose mpi4py is built against it: ``tests/site_venvs.py``,
  used as a user's shell after ``module load``, nothing of the main venv on ``PATH``): ``srun`` with
  the PMI the library speaks (``MPIWORKBENCH_MPI=site``, ``MPIWORKBENCH_LAUNCHER=srun``).

For each, a session of two ranks runs on the head node (the login node) as a notebook would: ``%%px``
cells that leave NumPy state on the ranks (one of them ``--trace``), a function of the notebook run
by ``wb.run`` leaving a variable a later cell prints, a wave solver stepped through its handle; it is saved
with two values, the solver's gathered field and a number every rank agrees on at any size. Then
``sbatch --nodes=2 --ntasks=2 job.sbatch``, from the job's directory on head: the job completes, its
Slurm output says what ran and how the ranks were started, ``output/np-2/compare.json`` says equal
(exit code 0: every cell's output equal to the session's on every rank, both values equal), and
its ranks ran one on each node: the traced cell's trace, written by the job, names each rank's
host, and Slurm's logs show both nodes allocated to the job and its MPI step launched on each (by
``srun``, or by Hydra through ``srun``). The same file at twice the size (``sbatch --nodes=2
--ntasks=4``: two ranks on each node) equals the session in its values. Nothing of the session or
of the jobs is left running; the simulated cluster's teardown checks the nodes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from mpiworkbench.core import implementations
from tests import site_venvs
from tests.cluster.slurm import processes_with_env, wait_until
from tests.multinode import ENDED, client_json, multinode  # noqa: F401 - multinode: the module's fixture

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.cost(75, "two notebook sessions (the mpich wheel's and a site MPI's) saved as jobs, each "
                                   "submitted with sbatch across two simulated nodes at two sizes")]

#: Generous bound (seconds) on a session and on one job; conditions are polled, never slept on.
LIMIT = 240
#: The site MPI standing in for a cluster's, and the PMI its ``srun`` speaks with it.
SITE, SITE_PMI = "debian-openmpi", "pmix"

#: The session, as a notebook's cells run it (IPython's shell, for ``%%px``): argv[1] is the job's
#: directory. One JSON line on stdout: what the export said, the world's hosts and MPI.
SESSION = r'''
import json
import sys

from IPython.testing.globalipapp import start_ipython

from mpiworkbench import Workbench

ip = start_ipython()


def cell(source):
    result = ip.run_cell(source)
    if not result.success:
        raise SystemExit(f"the session's cell failed:\n{source}\n{result.error_in_exec or result.error_before_exec!r}")
    return result.result


report = {}
wb = Workbench(n=2, timeout=120).start()
try:
    ip.user_ns["wb"] = wb
    cell("%%px\nimport numpy as np\nfrom mpi4py import MPI\ncomm = MPI.COMM_WORLD\n"
         "x = np.arange(4.0) * (comm.rank + 1)\nprint('rank', comm.rank, 'of', comm.size, 'holds', x.sum())")
    cell("def scaled(k):\n    global y\n    y = x * k\n    return float(y.sum())")
    report["scaled"] = cell("wb.run(scaled, 3)")
    cell("w = wb.wave(mesh=9)\nw.step(3)")
    # the same total at any size: every rank adds its share of a fixed sum
    cell("%%px --trace\ntotal = comm.allreduce(np.arange(10.0).sum() / comm.size)\nprint('y', y.sum(), 'total', total)")
    report["saved"] = repr(cell(f"wb.export_job({sys.argv[1]!r}, values={{'u': w, 'total': 'total'}})"))
    report["mpi"], report["hosts"] = wb.mpi, sorted(set(wb.hosts.values()))
finally:
    report["stop"] = wb.stop()
print(json.dumps(report), flush=True)
'''


def _site_env(base: dict[str, str]) -> dict[str, str]:
    """*base* as a user's shell after ``module load`` of the site's MPI: the site venv's Python
    first on ``PATH``, nothing of the main venv's, no variable that chooses another MPI."""
    main_bin = os.path.realpath(Path(sys.executable).parent)
    path = [d for d in base.get("PATH", "").split(os.pathsep) if d and os.path.realpath(d) != main_bin]
    dropped = {*implementations.ALL_VARIABLES, "VIRTUAL_ENV", "MPIWORKBENCH_MPIEXEC", "MPIWORKBENCH_MPICC"}
    env = {k: v for k, v in base.items() if k not in dropped}
    env = site_venvs.SITES[SITE].loaded({**env, "PATH": os.pathsep.join(path)})
    env["PATH"] = os.pathsep.join([str(site_venvs.python(SITE).parent), env["PATH"]])
    return env


def _end_left(marker: str, what: str) -> list[int]:
    """Wait (bounded) for the processes whose environment holds *marker* (a directory of this
    test's) to end; kill by pid those that do not, and return their pids."""
    try:
        wait_until(lambda: not processes_with_env(marker), what, 60)
    except AssertionError:
        left = processes_with_env(marker)
        for pid in left:  # started with this test's own directory in their environment: ours
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left
    return []


def _export(nodes, python: str, env: dict[str, str], tmp_path: Path) -> tuple[Path, dict]:
    """Run the session on head with *python*; the job's directory and the session's report."""
    script, job_dir, ipython = tmp_path / "session.py", tmp_path / "job", tmp_path / "session-ipython"
    script.write_text(SESSION)
    env = {**env, "IPYTHONDIR": str(ipython)}
    try:
        result = nodes.on(nodes.head, python, str(script), str(job_dir), env=env, cwd=tmp_path,
                          check=False, timeout=LIMIT)
    finally:
        left = _end_left(f"IPYTHONDIR={ipython}", "the session's engines and mpiexec to end")
    report = client_json(result)
    assert not left, f"the session left processes running (killed now): {left}"
    return job_dir, report


def _log(nodes, name: str) -> str:
    path = nodes.root / "log" / name
    return path.read_text(errors="replace") if path.exists() else ""


def _placement(nodes, job: str) -> dict[str, list[str]]:
    """Where Slurm put *job*, from its logs: the nodes the controller allocated to it, the nodes
    whose ``slurmd`` ran its batch script, and those whose ``slurmd`` launched a step of it (the
    ranks under ``srun``, Hydra's proxies under ``mpiexec``)."""
    allocated = re.search(rf"(?:Allocate JobId={job} NodeList=|Started JobId={job} in \S+ on )(\S+)",
                          _log(nodes, "slurmctld.log"))
    listed = nodes.run("scontrol", "show", "hostnames", allocated.group(1)).stdout.split() if allocated else []
    logs = {node: _log(nodes, f"slurmd-{node}.log") for node in nodes.compute}
    return {"allocated": sorted(listed),
            "batch": [node for node, log in logs.items() if f"Launching batch job {job} " in log],
            "step": [node for node, log in logs.items() if re.search(rf"launch task StepId={job}\.\d+ ", log)]}


def _rank_hosts(trace: Path) -> dict[int, str]:
    """Rank → host, as a traced cell's Chrome trace names its ranks (``rank R (HOST)``)."""
    events = json.loads(trace.read_text())["traceEvents"]
    named = [re.fullmatch(r"rank (\d+) \((\S+)\)", e["args"]["name"]) for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"]
    return {int(m.group(1)): m.group(2) for m in named if m}


def _submit(nodes, job_dir: Path, env: dict[str, str], ntasks: int) -> tuple[str, str, str, dict]:
    """``sbatch --nodes=2 --ntasks=NTASKS job.sbatch`` from the job's directory on head, waited for;
    the job's id, its last state, its Slurm output and where Slurm put it."""
    submitted = nodes.run("sbatch", "--parsable", f"--nodes={len(nodes.compute)}", f"--ntasks={ntasks}",
                          "job.sbatch", cwd=job_dir, env=env, check=False)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    output = job_dir / "output" / f"slurm-{job}.out"
    try:
        state = nodes.wait_job(job, LIMIT, output=output)
    finally:
        if nodes.job_state(job) not in ENDED:
            nodes.run("scancel", job, check=False)
    wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={nodes.conf}"),
               f"the processes of job {job} to end", LIMIT)
    said = output.read_text(errors="replace") if output.exists() else f"(no Slurm output {output})"
    # the daemons' logs are written as things happen; read them once they hold the job's launch
    placement = {}

    def logged():
        placement.update(_placement(nodes, job))
        return placement["allocated"] and placement["batch"] and len(placement["step"]) == len(nodes.compute)

    with contextlib.suppress(AssertionError):
        wait_until(logged, f"Slurm's logs of job {job}", 30)
    return job, state, said, placement


@pytest.mark.parametrize("mpi", ["mpich", "site"])
def test_a_saved_session_submitted_with_sbatch_runs_across_both_nodes_and_equals_the_session(multinode, tmp_path, mpi):
    nodes = multinode  # head and node1, node2 of two Slurm CPUs each, shared by the module's tests
    if mpi == "site":
        why = site_venvs.missing(SITE)
        if why:
            pytest.fail(why)  # make test builds the site venvs: missing is a failure, not a skip
        python, env, launcher = str(site_venvs.python(SITE)), _site_env(nodes.env), "srun"
    else:
        python, env, launcher = sys.executable, dict(nodes.env), "mpiexec"
    began = time.monotonic()
    job_dir, session = _export(nodes, python, env, tmp_path)
    exported = time.monotonic()
    assert session["mpi"] == mpi and session["hosts"] == [nodes.head], session
    assert "stopped" in session["stop"], session
    meta = json.loads((job_dir / "job.json").read_text())
    sbatch = (job_dir / "job.sbatch").read_text()
    assert meta["world"]["n"] == 2 and meta["world"]["mpi"] == mpi, meta["world"]
    # the launcher the session's MPI uses inside an allocation, written into the file
    assert f"export MPIWORKBENCH_MPI={mpi}\n" in sbatch, sbatch
    assert f"export MPIWORKBENCH_LAUNCHER={launcher}\n" in sbatch, sbatch
    if mpi == "site":
        assert meta["world"]["launcher_line"].startswith(f"srun --mpi={SITE_PMI} "), meta["world"]
    assert f"exec {python} -m mpiworkbench job run . " in sbatch, sbatch
    labels = [call["label"] for call in meta["calls"]]
    assert sum(label.startswith("%%px") for label in labels) == 2 and "wb.run: scaled(3)" in labels, labels
    assert [v["label"] for v in meta["values"]] == ["u", "total"], meta["values"]

    # the job's ranks get an IPython directory of the test's (each rank's shell makes a profile there)
    submit_env = {**env, "IPYTHONDIR": str(tmp_path / "job-ipython")}
    timings = {"session": exported - began}
    for ntasks in (2, 4):
        started = time.monotonic()
        job, state, said, placement = _submit(nodes, job_dir, submit_env, ntasks)
        timings[f"job at {ntasks}"] = time.monotonic() - started
        out = job_dir / "output" / f"np-{ntasks}"
        assert state in ("COMPLETED", "GONE"), f"job {job} ended {state}\n{said[-6000:]}\n{nodes.diagnose()}"
        assert f"on {ntasks} rank(s) under {mpi} (launcher: {launcher})" in said, said[-6000:]
        assert f"compared with the session (2 rank(s)) at {ntasks} rank(s):" in said, said[-6000:]
        assert (out / "compare.json").exists(), f"job {job} left no comparison\n{said[-6000:]}"
        verdict = json.loads((out / "compare.json").read_text())
        assert verdict["code"] == 0, f"{json.dumps(verdict, indent=1)}\n{said[-6000:]}"
        assert verdict["np"] == ntasks and verdict["session_np"] == 2, verdict
        assert not verdict["failed"] and verdict["ended_before"] is None, verdict
        assert all(row["outcome"] == "ok" and row["ranks"] == ntasks for row in verdict["calls"]), verdict["calls"]
        assert sorted(verdict["values"]) == ["total", "u"], verdict["values"]
        assert all(value["equal"] for value in verdict["values"].values()), verdict["values"]
        cells = [row for row in verdict["calls"] if row["kind"] == "cell"]
        assert len(cells) == 2, cells
        if ntasks == 2:  # at the session's size, every cell's output rank by rank
            assert all(row["same"] and not row["ranks_not_in_session"] for row in cells), cells
        traced = next(row for row in cells if row["label"].startswith("%%px --trace"))
        trace = out / f"trace-{traced['number']:04d}.json"
        assert trace.exists(), sorted(p.name for p in out.iterdir())
        # the world spanned both nodes, as many ranks on each: the traced cell's trace names every
        # rank's host; Slurm allocated both nodes, ran the batch script on one and launched the
        # job's MPI step on each
        hosts = _rank_hosts(trace)
        assert sorted(hosts) == list(range(ntasks)), hosts
        assert sorted(hosts.values()) == sorted(nodes.compute * (ntasks // len(nodes.compute))), hosts
        assert placement["allocated"] == nodes.compute, (placement, said[-3000:])
        assert len(placement["batch"]) == 1 and placement["step"] == nodes.compute, placement
    nodes.wait_for_no_jobs(limit=LIMIT)
    left = _end_left(f"IPYTHONDIR={tmp_path / 'job-ipython'}", "the jobs' ranks to end")
    assert not left, f"the jobs left processes running (killed now): {left}"
    print(f"\n{mpi}: " + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in timings.items()))
