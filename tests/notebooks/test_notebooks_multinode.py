"""The notebooks whose ranks behave differently on several hosts (:data:`SEVERAL_HOSTS`) once
more, attached to an ``mpi`` cluster whose engines are one Slurm job of
three ranks on two simulated nodes (``tests/multinode.py``): the profile made by ``mpiworkbench
profile create --launcher slurm --ip HEAD`` (signed and encrypted traffic), ``ipcluster start -n 3``
on head, two ranks on one node and one on the other, so the notebooks run at an odd rank count,
oversubscribed, attached to a cluster a user started, with some messages in shared memory and
others across the simulated network. Each notebook's kernel runs on head (the cluster's addresses
exist only there); its first cell attaches, and each notebook must run at the rank count it finds
with its ranks on two hosts. Notebook 00, run last, restarts the engines (a new batch job), and
``ipcluster stop`` must still leave nothing.

(Notebooks attached to an ``ipcluster`` of the local ``mpi`` launcher ran as a tier of their own
until this one took the three ranks: that launcher's attach, restart and stop are the cluster
tier's ``test_attach.py`` and ``test_shm_cleanup.py``, and the course's grading on a running
cluster in ``test_course_autograde.py``.)

Skipped, with the reason, where the simulated cluster cannot be built (not root, no Slurm).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pytest

from mpiworkbench.client.cluster.profiles import create_profile
from tests.cluster.slurm import wait_until
from tests.multinode import HeadIPCluster, client_json, simulated_cluster
from tests.notebooks.test_notebooks import ALL

pytestmark = pytest.mark.cost(180, (
                         "simulated nodes, a Slurm job of three engines across them, and the notebooks whose "
                         "ranks behave differently on several hosts run attached to it"))

#: Ranks of the engines' job: two on the first node (shared memory), one on the second (network).
RANKS = 3
#: Slurm CPUs of each compute node.
CPUS = 2
#: Bound (seconds) on the cluster's start and stop; each notebook has the notebooks' own cell limit.
LIMIT = 180
#: Wall-clock limit of the engines' batch job (minutes; the test Slurm's partition allows 30).
JOB_MINUTES = "29"

#: Run on head: the notebook named by argv[1] executed as the notebook tier does (with the
#: reference solutions; files it writes go to argv[2]); prints what it printed, as JSON.
RUNNER = """\
import json
import sys
from pathlib import Path

from tests.notebooks.test_notebooks import printed, run_notebook

nb = run_notebook(Path(sys.argv[1]), Path(sys.argv[2]))
print(json.dumps({"printed": printed(nb)}), flush=True)
"""

#: Run on head: one line of JSON with the hosts of the engines' ranks, once all have registered.
ENGINES = """\
import json
import sys

import ipyparallel as ipp

from mpiworkbench.client.cluster import engines
from mpiworkbench.core.machine import rank_info

client = ipp.Client(sys.argv[1])
try:
    engines.wait_registered(client, int(sys.argv[2]), 120)
    print(json.dumps(sorted(info["host"] for info in client[:].apply_sync(rank_info))), flush=True)
finally:
    client.close()
"""


@pytest.fixture(scope="module")
def two_nodes_cluster(tmp_path_factory):
    """Nodes, an ``mpi`` profile of the Slurm launcher listening on head's address, and its
    ipcluster on head with RANKS engines across both nodes; yields ``(nodes, env, ipcluster)``."""
    cluster = simulated_cluster(compute=2, cpus=CPUS)
    nodes = next(cluster)
    try:
        root = tmp_path_factory.mktemp("multinode-notebooks")
        ipython_dir = root / "ipython"
        create_profile("mpi", launcher="slurm", ip=nodes.head_addr, ipython_dir_=ipython_dir)
        # the notebooks' kernels import this checkout's tests package (the runner above)
        checkout = str(Path(__file__).resolve().parents[2])
        env = {**nodes.env, "IPYTHONDIR": str(ipython_dir), "MPIWORKBENCH_SMALL": "1",
               "SBATCH_TIMELIMIT": JOB_MINUTES,
               "PYTHONPATH": os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))}
        ipcluster = HeadIPCluster(nodes, "mpi", ipython_dir, root, env)
        try:
            ipcluster.start(RANKS, LIMIT)
            connection = ipcluster.profile_dir / "security" / "ipcontroller-client.json"
            hosts = client_json(nodes.on(nodes.head, sys.executable, "-c", ENGINES, str(connection), str(RANKS),
                                         env=env, cwd=root, check=False, timeout=LIMIT))
            assert len(hosts) == RANKS and sorted(set(hosts)) == nodes.compute, \
                f"{RANKS} engines on both nodes: {hosts}\n{ipcluster.diagnose()}"
            yield nodes, env, ipcluster
        finally:
            left = ipcluster.stop(LIMIT)
            nodes.wait_for_no_jobs()
        assert not left, f"ipcluster stop left processes running (killed now): {left}"
    finally:
        with contextlib.suppress(StopIteration):  # tear the nodes down; checks nothing is left
            next(cluster)


#: The notebooks run again here, each with what it does differently when its ranks are on two
#: hosts. The others compute and plot the same on any hosts: they run once, on the 2-rank world
#: of ``test_notebooks.py``, and their solvers and kernels at 1, 2 and 3 ranks in the MPI tier.
SEVERAL_HOSTS = {
    "00_start_here": "the panel's map of ranks to hosts, gathering across hosts, a hang report, "
                     "and a restart that is a new batch job",
    "09_mpi2_features": "one MPI-IO file written by ranks on two hosts, Spawn from a Slurm job's ranks",
    "10_reading_traces": "every rank's trace on one timeline, message arrows between hosts",
    "14_why_is_it_slow": "wait states and the critical path from traces of ranks on two hosts",
    "15_debugging_ranks": "ranks on another host debugged through the controller (relayed kernels)",
}
assert set(SEVERAL_HOSTS) <= {p.stem for p in ALL}, sorted(set(SEVERAL_HOSTS) - {p.stem for p in ALL})
#: Notebook 00 restarts the engines, and ipcluster ends the whole cluster when its engines stop
#: within 30 s of starting (IPClusterStart.early_shutdown): it runs last, after the others have
#: used those 30 s, rather than first behind a wait.
ORDER = ([p for p in ALL if p.stem in SEVERAL_HOSTS and p.stem != "00_start_here"]
         + [p for p in ALL if p.stem == "00_start_here"])


@pytest.mark.parametrize("path", ORDER, ids=[p.stem for p in ORDER])
def test_notebook_runs_attached_to_ranks_on_two_nodes(path: Path, two_nodes_cluster, tmp_path: Path):
    nodes, env, ipcluster = two_nodes_cluster
    if path.stem == "00_start_here":  # it restarts the engines: not within ipcluster's first 30 s
        wait_until(lambda: "Engines appear to have started successfully" in ipcluster.log.read_text(),
                   "ipcluster to consider its engines started", LIMIT, diagnose=ipcluster.diagnose)
    cell_limit = int(os.environ.get("MPIWORKBENCH_CELL_TIMEOUT", "600"))
    result = nodes.on(nodes.head, sys.executable, "-c", RUNNER, str(path), str(tmp_path),
                      env=env, cwd=tmp_path, check=False, timeout=4 * cell_limit)
    try:
        said = client_json(result)["printed"]
    except AssertionError as exc:  # the client's own output last: what a failure's tail shows
        raise AssertionError(f"the cluster's state:\n{ipcluster.diagnose()}\n{exc}") from None
    assert f"attached to the running 'mpi' cluster: {RANKS} MPI rank(s)" in said, said[-2000:]
