"""Every side-by-side snippet runs on every rank and matches the reference (1, 2, 3 ranks)."""

from __future__ import annotations

import pytest
from mpi4py import MPI

from mpiworkbench.core import implementations
from mpiworkbench.syntax import lessons, execution
from mpiworkbench.syntax.tables import table_4_1
COMM = MPI.COMM_WORLD
TABLE = table_4_1()


def expected_status(lesson: str, column: str) -> str:
    info = lessons.LESSONS[lesson]
    if COMM.size < info.min_ranks:
        return "skipped"
    if column == "mpi4jax" and implementations.current().name == "openmpi":
        return "unsupported"  # its bridge is built for MPICH's ABI: unavailable, with the reason
    if column in lessons.HISTORIC_COLUMNS or column in ("numba-mpi", "mpi4jax"):
        provided = all(TABLE[op][column] for op in info.operations)
        return "ok" if provided else "unsupported"
    return "ok"


@pytest.mark.parametrize("lesson", list(lessons.LESSONS))
def test_every_column_of_a_lesson(lesson):
    reports = execution.run_lesson(lesson, COMM)
    reports = COMM.bcast(reports, root=0)
    for column in lessons.COLUMNS:
        report = reports[column]
        want = expected_status(lesson, column)
        assert report["status"] == want, (column, report)
        if want == "ok":
            assert lessons.has_snippet(lesson, column)
            assert report["results"][COMM.rank] == report["results"][COMM.rank]  # JSON-able
        if want == "unsupported":
            assert report["reason"], (column, report)


def test_hello_prints_the_thesis_greeting():
    reports = COMM.bcast(execution.run_lesson("hello", COMM), root=0)
    for column in lessons.COLUMNS:
        if expected_status("hello", column) == "unsupported":
            continue
        out = reports[column]["outputs"][COMM.rank]
        assert out.strip() == f"Hello, world! I'm process {COMM.rank} of {COMM.size}.", (column, out)


def test_numba_column_refuses_a_sub_communicator():
    sub = COMM.Split(COMM.rank % 2, COMM.rank)  # a new communicator, even at 1 rank
    try:
        reports = execution.run_lesson("bcast", sub, ["numba-mpi", "mpi4py-buf", "c", "pypar"])
        reports = sub.bcast(reports, root=0)
        assert reports["numba-mpi"]["status"] == "unsupported"
        assert "COMM_WORLD" in reports["numba-mpi"]["reason"]
        assert {reports[c]["status"] for c in ("mpi4py-buf", "c", "pypar")} == {"ok"}
    finally:
        sub.Free()


@pytest.mark.parametrize("nranks", [1, 2, 3])
def test_run_on_first_ranks_only(nranks):
    if nranks > COMM.size:
        pytest.skip(f"needs {nranks} ranks")
    report = execution.run_on_subcommunicator("allreduce", nranks, ["c", "mpi4py-obj", "boostmpi"])
    if COMM.rank == 0:
        assert {r["status"] for r in report.values()} == {"ok"}
        assert all(r["ranks"] == nranks for r in report.values())
    elif COMM.rank >= nranks:
        assert report is None


def test_unknown_lesson_fails_on_every_rank():
    with pytest.raises(ValueError, match="unknown lesson"):
        execution.run_lesson("broadcast", COMM)



def test_numba_snippets_run_with_status_buffers_of_this_mpi_library(monkeypatch):
    # numba-mpi allocates MPICH's 20-byte MPI_Status; under Open MPI (24 bytes) a recv in a
    # learner's snippet would write past it. Running a snippet fits them, whatever ran before:
    # numba-mpi's own helpers are put back first (this process has fitted them already)
    import importlib

    import numba
    import numpy as np

    import mpiworkbench.backends.numba_mpi as ours

    @numba.njit
    def mpich_sized(count=1):  # what numba-mpi 1.3 allocates
        return np.empty(count * 5, dtype=np.intc)

    modules = [importlib.import_module(f"numba_mpi.{name}") for name in ("common", "api.recv", "api.sendrecv", "api.requests")]
    modules = [m for m in modules if hasattr(m, "create_status_buffer")]
    monkeypatch.setattr(ours, "_status_fixed", False)
    for module in modules:
        monkeypatch.setattr(module, "create_status_buffer", mpich_sized)
    execution.run_snippet("send_recv", "numba-mpi", COMM)
    for module in modules:
        assert module.create_status_buffer(1).nbytes >= MPI._sizeof(MPI.Status), module.__name__
