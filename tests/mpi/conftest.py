"""The MPI tier runs under ``mpiexec -n N python -m mpi4py -m pytest tests/mpi``.

Every rank runs every test (the same body at any size). Only rank 0 reports in full;
the other ranks print a one-line summary, so three ranks do not triple the log, and a
failure on any rank still fails the job (pytest's exit code on that rank)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.rank
    config.addinivalue_line("markers", "mpi_min(n): needs at least n ranks")
    if rank > 0:
        config.option.verbose = -2
        config.option.tbstyle = "short"
        config.option.reportchars = "fE"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from mpi4py import MPI

    size = MPI.COMM_WORLD.size
    for item in items:
        marker = item.get_closest_marker("mpi_min")
        if marker is not None and size < marker.args[0]:
            item.add_marker(pytest.mark.skip(reason=f"needs at least {marker.args[0]} ranks; running on {size}"))


@pytest.fixture
def comm():
    """A private duplicate of COMM_WORLD per test, freed afterwards."""
    from mpi4py import MPI

    dup = MPI.COMM_WORLD.Dup()
    yield dup
    dup.Free()
