"""A student's server runs into its Slurm time limit while a cell runs: the notebook says so.

A hub of the class (``tests/hub_class.py``) whose servers are jobs of a two-minute limit. A
student logs in, starts a server (a job on a compute node) and, in a kernel there, starts a world
of the job's allocation and runs a ``%%px`` cell that would run for an hour. A minute before the
limit (:data:`mpiworkbench.client.cluster.time_limit.MARGIN_S`) the cell must end with the workbench's
error, which names the job and its limit and says what to do (what JupyterLab shows as the cell's
error output: the Jupyter protocol's ``error`` message, read here over the server's websocket),
with the world already stopped (its ranks gone from the node while the job still runs); a later
cell starts with the message; then Slurm ends the job at its limit, and nothing is left.
"""

from __future__ import annotations

import re

import pytest

from mpiworkbench.client.cluster.time_limit import MARGIN_S
from tests.cluster.slurm import wait_until
from tests.cluster.test_hub import CLASS_CLIENT, _plan
from tests.hub_class import LIMIT, PYTHON, STUDENTS, ClassHub
from tests.multinode import client_json, simulated_cluster

pytestmark = [pytest.mark.timeout(900),
              pytest.mark.cost(155, (
                               "a student's server as a 2-minute Slurm job (Slurm's limits are whole minutes): the "
                               "cell must end a minute before the limit, the job at it"))]

#: The servers' time limit (sbatch --time, minutes).
RUNTIME_MIN = 2

#: The student's cells: a world of the job; a cell outliving the job; what is left of the world.
CELLS = [
    "import os, time\nfrom mpiworkbench import Workbench\nwb = Workbench().start()\n"
    "print('FACTS', os.environ['SLURM_JOB_ID'], sorted(set(wb.hosts.values())), wb.n)",
    "%%px\nimport time\ntime.sleep(3600)",
    # the engines of this job only: the class test may run a world of the same student beside it,
    # in a simulated cluster of its own (whose job ids start at 1 too: its SLURM_CONF tells them apart)
    "import subprocess\nprint('STATE', wb.state)\n"
    "job = {f'{k}={os.environ[k]}'.encode() for k in ('SLURM_JOB_ID', 'SLURM_CONF')}\n"
    "def of_job(pid):\n"
    "    try:\n"
    "        return job <= set(open(f'/proc/{pid}/environ', 'rb').read().split(b'\\0'))\n"
    "    except OSError:\n"
    "        return False\n"
    "found = subprocess.run(['pgrep', '-u', os.environ['USER'], '-f', 'engine_start'], capture_output=True, text=True)\n"
    "print('ENGINES', [pid for pid in found.stdout.split() if of_job(pid)])",
]


@pytest.fixture(scope="module")
def nodes():
    """Head and node1 of two Slurm CPUs: the student's job."""
    yield from simulated_cluster(compute=1, cpus=2)


def test_a_cell_running_into_the_job_s_time_limit_ends_with_a_clear_message(nodes, tmp_path):
    hub = ClassHub(nodes, tmp_path / "hub.log", ranks=2, runtime=str(RUNTIME_MIN))
    name = STUDENTS[0]
    try:
        hub.start()
        plan = {name: {"password": hub.accounts.passwords[name], "cells": CELLS}}
        client = nodes.on(nodes.head, PYTHON, "-c", CLASS_CLIENT, hub.base, _plan(tmp_path / "plan.json", plan),
                          env=hub.env, cwd=tmp_path, check=False, timeout=RUNTIME_MIN * 60 + LIMIT)
        if client.returncode != 0:
            pytest.fail(f"the class client failed:\n{client.stdout[-3000:]}\n{client.stderr[-5000:]}\n{hub.diagnose()}")
        queue = nodes.run("squeue", "--noheader", "--format=%i %u %T").stdout.split()
        world, running, after = client_json(client)[name]["cells"]
        assert world["error"] is None, world
        job = world["stdout"].split()[1]
        assert world["stdout"].startswith(f"FACTS {job} ['node1'] 2"), world
        # the cell that would have run for an hour ended before the job, with the message alone
        error = running["error"]
        assert error is not None, running
        assert error["ename"] == "JobTimeLimit", error
        assert re.fullmatch(rf"your Slurm job {job} reaches its time limit \({RUNTIME_MIN}:00\) in \d+ s: the MPI world "
                            r"was stopped; save your notebook now and start a new server from the hub for more time",
                            error["evalue"]), error
        left = int(re.search(r"in (\d+) s", error["evalue"]).group(1))
        assert 0 < left <= MARGIN_S + 1, error
        assert error["traceback"] == [f"JobTimeLimit: {error['evalue']}"], error  # no frames of the interrupted wait
        # the world was stopped while the job still ran; the next cell starts with the message
        assert queue[:3] == [job, name, "RUNNING"], queue
        assert "STATE stopped" in after["stdout"] and "ENGINES []" in after["stdout"], after
        assert after["stderr"].startswith(f"JobTimeLimit: your Slurm job {job} reaches its time limit"), after
        # then Slurm ends the job at its limit (the server with it), and nothing of it is left
        wait_until(lambda: job not in nodes.run("squeue", "--noheader", "--format=%i").stdout.split(),
                   f"job {job} to end at its time limit", RUNTIME_MIN * 60 + LIMIT, diagnose=hub.diagnose)
        assert hub.stop() is not None, f"the hub did not stop\n{hub.diagnose()}"
        hub.check_nothing_left()
        print(f"\njob {job}: the cell ended {left} s before its limit, after running {running['seconds']:.0f} s")
    finally:
        hub.stop()
        hub.accounts.remove()

