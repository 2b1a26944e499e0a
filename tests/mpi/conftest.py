"""The MPI tier runs under ``mpiexec -n N python -m mpi4py -m pytest tests/mpi``.

Every rank runs every test (the same body at any size). Only rank 0 reports in full;
the other ranks print a one-line summary, so three ranks do not triple the log, and a
failure on any rank still fails the job (pytest's exit code on that rank)."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)  # after the terminal reporter is registered
def pytest_configure(config: pytest.Config) -> None:
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.rank
    config.addinivalue_line("markers", "mpi_min(n): needs at least n ranks")
    if rank > 0:
        # silence this rank's progress dots; report only its failures, prefixed by rank
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if reporter is not None:
            config.pluginmanager.unregister(reporter)
        config.pluginmanager.register(_RankFailureReporter(rank), "mpi-rank-failures")


class _RankFailureReporter:
    def __init__(self, rank: int):
        self.rank = rank

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            import sys

            print(f"[rank {self.rank}] FAILED {report.nodeid} ({report.when})\n{report.longreprtext}", file=sys.stderr, flush=True)


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
