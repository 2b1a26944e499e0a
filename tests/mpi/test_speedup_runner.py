"""run_point on sub-communicators of COMM_WORLD: every rank count up to the world size."""

import pytest
from mpi4py import MPI

from mpiworkbench.speedup import SpeedupSpec, run_experiment
from mpiworkbench.speedup.inner import exact_inner, local_range
from mpiworkbench.speedup.point import placement, run_point
COMM = MPI.COMM_WORLD


def inner_point(nranks, variant="numpy", size=1001, **extra):
    return {
        "experiment": "inner", "variant": variant, "nranks": nranks, "size": size, "base_size": size,
        "repeats": 2, "warmup": 1, "params": {"loops": 3}, **extra,
    }


@pytest.mark.parametrize("variant", ["c", "numpy", "numpy-pickle"])
def test_every_rank_count_gives_the_exact_inner_product(variant):
    for nranks in range(1, COMM.size + 1):
        record = run_point(inner_point(nranks, variant), COMM)
        assert record["nranks"] == nranks
        assert len(record["times"]) == 2 and all(t > 0 for t in record["times"])
        assert record["verify"] == {"value": exact_inner(1001), "expected": exact_inner(1001), "ok": True}


def test_record_is_the_same_on_every_rank():
    record = run_point(inner_point(COMM.size), COMM)
    assert COMM.allgather(record["times"]) == [record["times"]] * COMM.size


def test_local_ranges_cover_the_vector_unevenly():
    ranges = [local_range(1001, r, COMM.size) for r in range(COMM.size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == 1001
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_placement_counts_active_ranks_and_cores():
    where = placement(COMM, COMM.rank == 0)
    assert sum(h["active_ranks"] for h in where["hosts"].values()) == 1
    assert sum(h["resident_ranks"] for h in where["hosts"].values()) == COMM.size
    assert where["cores"] >= 1


def test_too_many_ranks_raises_on_every_rank():
    with pytest.raises(ValueError, match=f"between 1 and {COMM.size}"):
        run_point(inner_point(COMM.size + 1), COMM)


def test_bad_kernel_input_raises_on_every_rank_including_idle_ones():
    # n smaller than the rank count fails inside the sub-communicator; idle ranks must not hang
    with pytest.raises(ValueError, match="vector length n must be at least the number of ranks"):
        run_point(inner_point(COMM.size, size=COMM.size - 1 if COMM.size > 1 else 0), COMM)
    COMM.Barrier()


def test_experiment_over_all_rank_counts_derives_speedup():
    spec = SpeedupSpec("inner", nranks=list(range(1, COMM.size + 1)), sizes=[5000], variants=["c"], repeats=2,
                       params={"loops": 2})
    result = run_experiment(spec, lambda p: run_point(p, COMM))
    assert [p["nranks"] for p in result.points] == list(range(1, COMM.size + 1))
    assert result.points[0]["speedup"] == 1.0
    assert all(p["efficiency"] > 0 for p in result.points)
