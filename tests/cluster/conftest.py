"""Real ipyparallel MPI clusters, always stopped in finalizers."""

from __future__ import annotations

import os

import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.cluster.profiles import create_profile
from tests.ipcluster import IPCluster


@pytest.fixture(scope="session")
def _shared_wb():
    bench = Workbench(n=2, timeout=120)
    bench.start()
    yield bench
    bench.stop()


@pytest.fixture
def wb(_shared_wb, request):
    """A started 2-engine workbench shared by the tier (tests must leave it usable).

    A world found dead fails the test that wanted it, naming the cause the workbench gives and
    mpiexec's last output: a world lives as long as its user (nothing here restarts it)."""
    if _shared_wb.cluster is not None and _shared_wb._world_died():
        tail = "\n".join(_shared_wb.world_log().splitlines()[-40:])
        pytest.fail(f"the shared workbench's MPI world was found dead before {request.node.nodeid}: "
                    f"{_shared_wb.how_it_ended()}\nmpiexec's and the controller's last output:\n{tail}",
                    pytrace=False)
    return _shared_wb


@pytest.fixture
def fresh_wb(request):
    """A workbench of its own, for tests that break or restart the MPI world.

    Parametrize indirectly with the rank count (default 2)."""
    n = getattr(request, "param", 2)
    # (failure_grace: a rank of three on two loaded cores was seen starved for 2.4 s in a CI run)
    bench = Workbench(n=n, timeout=60, oversubscribe=True, failure_grace=5.0)
    request.addfinalizer(bench.stop)
    bench.start()
    return bench


@pytest.fixture
def ipcluster_mpi(tmp_path, monkeypatch):
    """``ipcluster start -n 2 --profile=mpi`` in a private IPython directory."""
    ipython_dir = tmp_path / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    ipcluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    client = ipcluster.start(2)
    client.close()
    yield ipcluster
    ipcluster.stop()
