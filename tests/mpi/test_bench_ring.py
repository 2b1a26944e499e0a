"""`bench ring`: report 003's persistent-request ring, on every backend that has persistent requests."""

import pytest
from mpi4py import MPI

from mpiworkbench.bench.harness import BenchRun

COMM = MPI.COMM_WORLD


def test_ring_times_one_hop_on_c_and_mpi4py_buf_and_says_why_not_elsewhere():
    if COMM.size < 2:
        with pytest.raises(ValueError, match="ring needs at least 2 ranks"):
            BenchRun("ring", ["c"], [1], comm=COMM, measure_load=False)
        return
    h = BenchRun("ring", ["c", "mpi4py-buf", "mpi4py-obj", "numba-mpi", "api:c"], [1, 4096],
                policy={"iterations": 50, "warmup": 5}, comm=COMM, measure_load=False)
    rows = h.run()
    assert sorted({r["backend"] for r in rows}) == ["c", "mpi4py-buf"]
    for r in rows:
        assert r["t_us"] > 0 and r["mode"].startswith("block timing per hop")
        assert (r["throughput_MBps"] > 0) and r["nprocs"] == COMM.size
    assert "persistent requests" in h.skipped["mpi4py-obj"]
    assert "persistent requests" in h.skipped["numba-mpi"]
    assert "persistent requests" in h.skipped["api:c"]


def test_when_no_backend_asked_for_can_run_the_ring_it_says_so_and_names_those_that_can():
    if COMM.size < 2:
        return  # the rank count is refused first (above)
    with pytest.raises(ValueError, match=r"none of the backends asked for can run ring here: numba-mpi: "
                                         r".*persistent requests.*These can: --backend c,mpi4py-buf"):
        BenchRun("ring", ["numba-mpi"], [1], comm=COMM, measure_load=False)
