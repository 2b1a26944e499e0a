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


#: The communicators every ``comm`` test runs on, as mpi4py's own test suite does: the
#: world, a single rank on its own, and a duplicate of the world (a new context: messages
#: cannot match the world's, so code that silently uses COMM_WORLD shows up).
COMMS = ("world", "self", "dup")


@pytest.fixture(params=COMMS)
def comm(request):
    """A communicator to run the test on: ``COMM_WORLD``, ``COMM_SELF`` or a ``Dup()`` of the world.

    Every rank gets the same parameter in the same order, so collectives line up. The
    duplicate is freed after the test. A test that needs more ranks than the communicator
    has skips with a reason (all ranks skip alike; on COMM_SELF every rank runs alone).
    """
    from mpi4py import MPI

    if request.param == "world":
        yield MPI.COMM_WORLD
    elif request.param == "self":
        yield MPI.COMM_SELF
    else:
        dup = MPI.COMM_WORLD.Dup()
        try:
            yield dup
        finally:
            dup.Free()


def need_ranks(comm, n: int) -> None:
    """Skip the calling test (on every rank of *comm*) unless *comm* has at least *n* ranks."""
    if comm.size < n:
        pytest.skip(f"needs at least {n} ranks; this communicator has {comm.size}")


@pytest.fixture
def interposer():
    """The ranks' MPI calls go through the interposer (the tier runs with it preloaded:
    ``make test-mpi``); recording is off again after the test. Without it the test fails and
    says how to run it, unless ``MPIWORKBENCH_INTERPOSER=0`` asks to skip."""
    import os

    from mpiworkbench.trace import library, recorder

    if not recorder.available():
        if os.environ.get(library.ENV_SWITCH) == "0":
            pytest.skip("MPIWORKBENCH_INTERPOSER=0: ranks run without the interposer")
        pytest.fail("ranks run without the interposer: run `make test-mpi` (mpiexec "
                    "$(python -m mpiworkbench.trace.library) -n N python -m mpi4py -m pytest tests/mpi)")
    yield
    if recorder.is_on():
        recorder.stop()



@pytest.fixture
def shared_tmp():
    """A temporary directory every rank of ``COMM_WORLD`` names alike (rank 0 makes it and,
    once every rank is done with it, removes it)."""
    import shutil
    import tempfile

    from mpi4py import MPI

    world = MPI.COMM_WORLD
    path = world.bcast(tempfile.mkdtemp(prefix="mpiwb-mpi-test-") if world.rank == 0 else None, root=0)
    yield path
    world.Barrier()
    if world.rank == 0:
        shutil.rmtree(path, ignore_errors=True)
