"""A kernel inside a Slurm job: ``Workbench()`` makes its world of the job's allocation.

On the simulated nodes (``tests/multinode.py``: head + two compute nodes of three Slurm CPUs
each) an ``sbatch`` job runs what a notebook server's kernel would run inside its job:
``Workbench().start()`` with no size. The world must be the job's — its size the job's task
count, its ranks on the job's nodes (``wb.hosts`` equal to what Slurm lists for the job) — and,
once the job ends by ``scancel`` or by its time limit, nothing of it may be left on any node: no
process of the job, no job in the queue, no file of the world in a node's ``/dev/shm``.

1. two nodes × one task: the world spans both nodes; ``wb.stop()`` inside the job; a second
   world is started and the job is cancelled under it.
2. one node × three tasks: three ranks on one node; the job runs into its time limit (one
   minute: Slurm's smallest) with the world up.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from mpiworkbench.core.shm import WORLD_FILE_PREFIXES
from tests.cluster.slurm import processes_with_env, wait_until
from tests.multinode import simulated_cluster

#: A job that goes wrong fails its test instead of the run (teardown still cleans up).
pytestmark = [pytest.mark.timeout(420),
              pytest.mark.cost(95, (
                               "two jobs on simulated nodes, one of them running into Slurm's smallest time limit "
                               "(one minute) with its world up"))]

#: Generous bound (seconds) on one job's steps; conditions are polled, never slept on.
LIMIT = 150
PYTHON = sys.executable

#: What the job runs (a notebook's kernel would run the same cells): a workbench of the
#: allocation, its facts written to argv[1] (JSON, replaced whole each time); with argv[2] ==
#: "restart-then-hold" it stops the world, starts a second one and keeps it until the job is
#: ended from outside; with "hold" it keeps the first.
KERNEL_IN_JOB = """\
import json
import os
import sys
import threading
import time

import ipyparallel as ipp

from mpiworkbench import Workbench
from mpiworkbench.core.machine import rank_info

out, then = sys.argv[1], sys.argv[2]
report = {"job": os.environ["SLURM_JOB_ID"]}


def write(**facts):
    report.update(facts)
    with open(out + ".part", "w") as part:
        json.dump(report, part)
    os.replace(out + ".part", out)


@ipp.interactive
def allreduce_ranks():
    from mpi4py import MPI

    return MPI.COMM_WORLD.allreduce(MPI.COMM_WORLD.rank + 1)


began = time.monotonic()
wb = Workbench(activate=False, timeout=120)
asked = wb.n
wb.start()
ready = time.monotonic() - began
write(asked=asked, n=wb.n, launcher=wb.launcher, ready_s=ready, hosts=sorted(wb.hosts.values()),
      info=wb.run(rank_info), allreduce=wb.run(allreduce_ranks),
      controller=wb.cluster.controller_ip,
      controller_args=list(wb.cluster.controller_args), kernel_host=os.uname().nodename)
if then == "restart-then-hold":
    write(stopped=wb.stop())
    wb = Workbench(activate=False, timeout=120).start()
    write(second={"hosts": sorted(wb.hosts.values()), "allreduce": wb.run(allreduce_ranks),
                  "pids": [info["pid"] for info in wb.run(rank_info)]})
write(holding=True)
threading.Event().wait()  # the world stays until the job is ended from outside
"""

@pytest.fixture(scope="module")
def nodes():
    """Head and node1, node2 of three Slurm CPUs each (a job of 1 node x 3 tasks fits)."""
    yield from simulated_cluster(compute=2, cpus=3)


def _world_files(nodes) -> dict[str, list[str]]:
    """Node → the MPI world files in its /dev/shm (each node has a /dev/shm of its own)."""
    found = {}
    for node in nodes.compute:
        names = nodes.on(node, "ls", "-A", "/dev/shm").stdout.split()
        found[node] = [name for name in names if name.startswith(WORLD_FILE_PREFIXES)]
    return found


def _job_nodes(nodes, job: str) -> list[str]:
    """The nodes Slurm gave *job*, one name each (``scontrol show hostnames``)."""
    listed = nodes.run("squeue", "--noheader", f"--jobs={job}", "--format=%N").stdout.strip()
    return sorted(nodes.run("scontrol", "show", "hostnames", listed).stdout.split())


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@pytest.mark.parametrize("shape,ending", [((2, 1), "scancel"), ((1, 3), "time limit")],
                         ids=["2-nodes-x-1-task", "1-node-x-3-tasks"])
def test_a_kernel_inside_a_job_gets_the_jobs_world(nodes, tmp_path, shape, ending):
    node_count, per_node = shape
    tasks = node_count * per_node
    program = tmp_path / "kernel.py"
    program.write_text(KERNEL_IN_JOB)
    report_file, log = tmp_path / "report.json", tmp_path / "job.out"
    assert _world_files(nodes) == {node: [] for node in nodes.compute}, "a node's /dev/shm was not clean before"
    minutes = "1" if ending == "time limit" else "5"
    script = tmp_path / "kernel.sbatch"
    script.write_text(
        "#!/bin/sh\n"
        f"#SBATCH --nodes={node_count}\n#SBATCH --ntasks={tasks}\n#SBATCH --ntasks-per-node={per_node}\n"
        f"#SBATCH --time={minutes}\n#SBATCH --output={log}\n"
        f"exec {PYTHON} {program} {report_file} {'restart-then-hold' if ending == 'scancel' else 'hold'}\n")
    # the kernel's IPython directory (its profile_default) is the test's, not the machine's
    env = {**nodes.env, "IPYTHONDIR": str(tmp_path / "ipython")}
    submitted = time.monotonic()
    job = nodes.run("sbatch", "--parsable", str(script), cwd=tmp_path, env=env).stdout.strip().split(";")[0]

    def diagnose() -> str:
        return (log.read_text(errors="replace")[-6000:] if log.exists() else "(no job output)") + nodes.diagnose()

    try:
        report = wait_until(lambda: (r := _read(report_file)).get("holding") and r, "the job's world",
                            LIMIT, interval=0.2, diagnose=diagnose)
        held = time.monotonic()
        granted = _job_nodes(nodes, job)
        job_processes = processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={nodes.conf}")
        during = _world_files(nodes)  # what the check after the job's end must find gone
        if ending == "scancel":
            nodes.run("scancel", job)
        state = nodes.wait_job(job, LIMIT, output=log)
    finally:
        if nodes.job_state(job) not in ("COMPLETED", "CANCELLED", "TIMEOUT", "GONE"):
            nodes.run("scancel", job, check=False)
    ended = time.monotonic()
    # the world is the job's: its size, its nodes, one world across them
    assert report["asked"] == tasks and report["n"] == tasks, report
    assert report["launcher"] == "mpi", report
    assert len(granted) == node_count, granted
    assert sorted(set(report["hosts"])) == granted, (report, granted)
    assert sorted(report["hosts"]) == sorted(granted * per_node), report
    assert [info["rank"] for info in report["info"]] == list(range(tasks)), report
    assert {info["size"] for info in report["info"]} == {tasks}, report
    assert report["allreduce"] == [tasks * (tasks + 1) // 2] * tasks, report
    assert report["kernel_host"] in granted, report  # the kernel runs in the job's batch step
    if node_count > 1:
        # the engines on the other node reach the controller on the job's network, encrypted
        assert "--IPController.enable_curve=True" in report["controller_args"], report
    else:
        assert "--IPController.enable_curve=True" not in report["controller_args"], report
    if ending == "scancel":
        assert "stopped" in report["stopped"], report
        assert report["second"]["hosts"] == report["hosts"], report
        assert report["second"]["allreduce"] == report["allreduce"], report
        assert state in ("CANCELLED", "GONE"), state
    else:
        assert state in ("TIMEOUT", "GONE"), state
    assert job_processes, "the job's processes were seen while it ran"
    assert all(during[node] for node in granted), f"the world's files in /dev/shm while it ran: {during}"
    # nothing of the job is left on any node: no process, no job, no world file in /dev/shm
    wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={nodes.conf}"),
               f"the processes of job {job} to end", LIMIT, diagnose=diagnose)
    nodes.wait_for_no_jobs(limit=LIMIT)
    assert _world_files(nodes) == {node: [] for node in nodes.compute}, diagnose()
    print(f"\n{'x'.join(map(str, shape))}: world ready {report['ready_s']:.1f} s after Workbench().start(), "
          f"job up to world held {held - submitted:.1f} s, {ending} to job gone {ended - held:.1f} s")
