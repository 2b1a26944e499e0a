"""The wave, CG and micro-benchmark kernels time correctly on every sub-communicator size."""

import pytest

from mpiworkbench.speedup.point import run_point


def point(experiment, nranks, size, variant, **params):
    return {"experiment": experiment, "variant": variant, "nranks": nranks, "size": size, "base_size": size,
            "repeats": 2, "warmup": 0, "params": params}


@pytest.mark.parametrize("variant", ["numpy/sendrecv", "numpy/nonblocking"])
def test_wave_points_compute_the_wave(comm, variant):
    for nranks in range(1, comm.size + 1):
        record = run_point(point("wave", nranks, 9, variant, steps=3), comm)
        assert record["verify"]["ok"], record["verify"]
        assert record["verify"]["steps"] == 6  # two repetitions of three steps


def test_cg_points_solve_from_scratch_each_repetition(comm):
    iterations = set()
    for nranks in range(1, comm.size + 1):
        record = run_point(point("cg", nranks, 15, "classic/rows", tol=1e-8), comm)
        assert record["verify"]["status"] == "converged"
        iterations.add(record["verify"]["iterations"])
    assert len(iterations) == 1  # same iterations on every rank count


def test_bench_points_time_a_collective(comm):
    for nranks in range(1, comm.size + 1):
        record = run_point(point("bench", nranks, 64, "allreduce", iterations=5, backend="mpi4py-buf"), comm)
        assert record["verify"]["ok"] and record["verify"]["seconds_per_call"] > 0


def test_wave_mesh_too_small_for_the_ranks_fails_on_every_rank(comm):
    if comm.size == 1:
        pytest.skip("one rank can own any mesh of at least 3 points")
    with pytest.raises(ValueError, match="mesh"):
        run_point(point("wave", comm.size, 3, "numpy/sendrecv", steps=1), comm)
    comm.Barrier()
