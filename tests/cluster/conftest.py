"""Real ipyparallel MPI clusters, always stopped in finalizers."""

from __future__ import annotations

import pytest

from mpiworkbench import Workbench


@pytest.fixture(scope="session")
def wb():
    """A started 2-engine workbench shared by the tier (tests must leave it usable)."""
    bench = Workbench(n=2, timeout=120)
    bench.start()
    yield bench
    bench.stop()


@pytest.fixture
def fresh_wb(request):
    """A workbench of its own, for tests that break or restart the MPI world.

    Parametrize indirectly with the rank count (default 2)."""
    n = getattr(request, "param", 2)
    bench = Workbench(n=n, timeout=60, oversubscribe=True, failure_grace=1.0)
    request.addfinalizer(bench.stop)
    bench.start()
    return bench
