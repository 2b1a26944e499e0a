"""Every benchmark on every backend, at any world size: rows are sane and data arrived.

Run with ``mpiexec -n N python -m mpi4py -m pytest tests/mpi/test_bench.py`` for N = 1, 2, 3.
The buffers are filled with ``rank + 1`` before the sweep, so after it the receive side
must hold what the operation delivers — the loop really did the communication.
"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.bench.catalog import BENCHMARKS
from mpiworkbench.bench.method import Policy
from mpiworkbench.bench.harness import BenchRun
COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()
BACKENDS = ["mpi4py-buf", "mpi4py-obj", "numba-mpi", "c", "api:mpi4py-buf", "api:c"]
SIZES = [8, 24, 4096]
POLICY = Policy(iterations=3, warmup=1)


def runnable(name):
    return SIZE >= BENCHMARKS[name].min_ranks


def as_f64(value: int, count: int) -> np.ndarray:
    return np.full(8 * count, value, dtype=np.uint8).view(np.float64)


def check_delivery(name: str, run: BenchRun, n: int) -> None:
    """What the receive side must hold after *name* ran with sends filled with rank + 1."""
    s, r = run.buffers.send, run.buffers.recv
    if name == "pingpong" and RANK < 2:
        assert np.all(r[:n] == 2 - RANK)
    elif name == "bw" and RANK == 1:
        assert np.all(r[:n] == 1)
    elif name == "bibw" and RANK < 2:
        assert np.all(r[:n] == 2 - RANK)
    elif name in ("sendrecv", "ring"):  # the ring passes each rank's message to the next
        assert np.all(r[:n] == (RANK - 1) % SIZE + 1)
    elif name in ("bcast", "bcast_linear", "bcast_binomial"):
        assert np.all(s[:n] == 1)
    elif name in ("reduce", "allreduce") and (RANK == 0 or name == "allreduce"):
        count = n // 8
        expected = sum(as_f64(k + 1, count) for k in range(SIZE))
        assert np.allclose(run.buffers.recv_f64[:count], expected, rtol=1e-12)
    elif name == "gather" and RANK == 0 or name in ("allgather", "alltoall"):
        for k in range(SIZE):
            assert np.all(r[k * n:(k + 1) * n] == k + 1), (name, k)
    elif name == "scatter":
        assert np.all(r[:n] == 1)


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_backend_measures_and_delivers(name):
    if not runnable(name):
        pytest.skip(f"{name} needs {BENCHMARKS[name].min_ranks} ranks")
    run = BenchRun(name, BACKENDS, SIZES, POLICY, comm=COMM, measure_load=False)
    expected_sizes = [0] if not BENCHMARKS[name].sized else SIZES
    if name == "alltoall":
        assert "numba-mpi" in run.skipped and "alltoall" in run.skipped["numba-mpi"]
    elif name == "ring":  # persistent requests: only C and mpi4py's buffer methods have them
        assert set(run.loops) == {"c", "mpi4py-buf"}
        assert all("persistent requests" in why for why in run.skipped.values())
    else:
        assert run.skipped == {}
    for backend in run.loops:
        for size in expected_sizes:
            # fresh, rank-specific contents for every backend: prove this loop delivered them
            buffers = run.prepare(size)
            assert run.prepare(size) is buffers  # measure() times these very buffers
            buffers.send.fill(RANK + 1)
            buffers.recv.fill(0)
            row = run.measure(backend, size)
            assert row["benchmark"] == name and row["backend"] == backend and row["size"] == size
            assert row["iterations"] == 3 and row["warmup"] == 1 and row["nprocs"] == SIZE
            assert 0 < row["t_min_us"] <= row["t_avg_us"] <= row["t_max_us"]
            if name == "alltoall" and SIZE == 1:
                assert row["throughput_MBps"] == 0  # 2(N-1)S/t: nothing leaves the rank
            elif BENCHMARKS[name].sized:
                assert row["throughput_MBps"] > 0
            if backend != "mpi4py-obj" and name != "barrier":  # objects land in new arrays
                check_delivery(name, run, size)
    # rows are the same on every rank (computed from allgathered times)
    rows = COMM.allgather(run.measure(next(iter(run.loops)), expected_sizes[0])["benchmark"])
    assert len(set(rows)) == 1


def test_sweep_streams_rows_size_by_size():
    name = "pingpong" if SIZE >= 2 else "allreduce"
    run = BenchRun(name, ["c", "mpi4py-buf"], [8, 64], POLICY, comm=COMM, measure_load=False)
    seen = []
    run.run(on_rows=lambda rows: seen.append([(r["size"], r["backend"]) for r in rows]))
    assert seen == [[(8, "c"), (8, "mpi4py-buf")], [(64, "c"), (64, "mpi4py-buf")]]
    assert run.done and run.step() == []
    doc = run.summary()
    assert doc["complete"] and len(doc["rows"]) == 4
    assert {o["backend"] for o in doc["overhead_vs_c"]} == {"mpi4py-buf"}
    if name == "pingpong":
        assert set(doc["fit"]) == {"c", "mpi4py-buf"}


def test_repeats_are_interleaved_and_reported_as_their_median():
    name = "pingpong" if SIZE >= 2 else "allreduce"
    run = BenchRun(name, ["c", "mpi4py-buf"], [8, 1024], Policy(iterations=20, warmup=2, repeats=3),
                   comm=COMM, measure_load=False)
    timed = []
    for backend, loop in list(run.loops.items()):  # record the order the loops are timed in
        def spy(buffers, n, iters, warmup, _loop=loop, _backend=backend):
            if iters == 20:  # the timed loop, not the probe
                timed.append((_backend, n))
            return _loop(buffers, n, iters, warmup)
        run.loops[backend] = spy
    rows = run.run()
    assert timed == [("c", 8), ("mpi4py-buf", 8)] * 3 + [("c", 1024), ("mpi4py-buf", 1024)] * 3
    for row in rows:
        assert row["repeats"] == 3 and len(row["t_us_repeats"]) == 3
        assert row["t_us"] == sorted(row["t_us_repeats"])[1]
    assert COMM.allgather([r["t_us"] for r in rows]) == [[r["t_us"] for r in rows]] * SIZE
    single = BenchRun(name, ["c"], [8], POLICY, comm=COMM, measure_load=False).step()[0]
    assert single["repeats"] == 1 and single["t_us_repeats"] == [single["t_us"]]


def test_adopted_buffers_are_the_ones_timed():
    from mpiworkbench.bench.buffers import Buffers
    run = BenchRun("allreduce", ["c", "mpi4py-buf"], [64], POLICY, comm=COMM, measure_load=False)
    mine = Buffers.for_size(64)
    mine.send_f64[:] = RANK + 1.0
    run.adopt_buffers(mine, 64)
    rows = run.step()
    assert [r["backend"] for r in rows] == ["c", "mpi4py-buf"] and run.buffers is mine
    assert np.all(mine.recv_f64 == SIZE * (SIZE + 1) / 2)  # the reduction landed in our memory
    with pytest.raises(ValueError, match="too small for 128 B"):
        run.adopt_buffers(mine, 128)


def test_time_cap_lowers_iterations_and_says_so():
    run = BenchRun("allreduce", ["c"], [8], Policy(iterations=10**7, warmup=1, time_cap_s=0.01),
                   comm=COMM, measure_load=False)
    row = run.step()[0]
    assert row["capped"] and 5 <= row["iterations"] < 10**7


def test_bad_input_raises_on_every_rank():
    with pytest.raises(ValueError, match="unknown backend 'fortran'"):
        BenchRun("bcast", ["fortran"], [8], POLICY, comm=COMM)
    with pytest.raises(ValueError, match="sizes must be at least 8 B; got 4 B"):
        BenchRun("allreduce", ["c"], [4, 8], POLICY, comm=COMM)
    if SIZE < 2:
        with pytest.raises(ValueError, match="pingpong needs at least 2 ranks; got 1"):
            BenchRun("pingpong", ["c"], [8], POLICY, comm=COMM)


def test_environment_is_recorded():
    run = BenchRun("barrier", ["c"], [8], POLICY, comm=COMM, measure_load=True)
    env = run.environment
    assert env["np"] == SIZE
    assert env["thread_level"] in ("single", "funneled", "serialized", "multiple")
    assert env["mpi_library"] and env["packages"]["mpi4py"]
    assert len(env["binding"]) == SIZE
    assert env["foreign_load_cores"] is None or env["foreign_load_cores"] >= 0
    assert isinstance(env["warnings"], list)


def test_numba_loops_run_on_the_world_or_a_duplicate_of_it_only():
    from mpiworkbench.backends import NotSupportedError, timed_loop
    dup = COMM.Dup()
    sub = COMM.Split(0 if RANK == 0 else 1, RANK)
    try:
        assert callable(timed_loop("numba-mpi", "allreduce", dup))
        with pytest.raises(NotSupportedError, match="Alltoall"):
            timed_loop("numba-mpi", "alltoall", COMM)
        if SIZE > 1:  # at one rank the split has the world's ranks in the world's order
            with pytest.raises(NotSupportedError, match="COMM_WORLD"):
                timed_loop("numba-mpi", "allreduce", sub)
            run = BenchRun("allreduce", ["numba-mpi", "c"], [8], POLICY, comm=sub, measure_load=False)
            assert "COMM_WORLD" in run.skipped["numba-mpi"] and list(run.loops) == ["c"]
    finally:
        dup.Free()
        sub.Free()
