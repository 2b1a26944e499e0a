"""run_point on sub-communicators of COMM_WORLD: every rank count up to the world size."""

import pytest

from mpiworkbench.speedup import SpeedupSpec, run_experiment
from mpiworkbench.speedup.inner import exact_inner, local_range
from mpiworkbench.speedup.point import placement, run_point


def inner_point(nranks, variant="numpy", size=1001, **extra):
    return {
        "experiment": "inner", "variant": variant, "nranks": nranks, "size": size, "base_size": size,
        "repeats": 2, "warmup": 1, "params": {"loops": 3}, **extra,
    }


@pytest.mark.parametrize("variant", ["c", "numpy", "numpy-pickle"])
def test_every_rank_count_gives_the_exact_inner_product(comm, variant):
    for nranks in range(1, comm.size + 1):
        record = run_point(inner_point(nranks, variant), comm)
        assert record["nranks"] == nranks
        assert len(record["times"]) == 2 and all(t > 0 for t in record["times"])
        assert record["verify"] == {"value": exact_inner(1001), "expected": exact_inner(1001), "ok": True}


def test_record_is_the_same_on_every_rank(comm):
    record = run_point(inner_point(comm.size), comm)
    assert comm.allgather(record["times"]) == [record["times"]] * comm.size


def test_local_ranges_cover_the_vector_unevenly(comm):
    ranges = [local_range(1001, r, comm.size) for r in range(comm.size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == 1001
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))


def test_placement_counts_active_ranks_and_cores(comm):
    where = placement(comm, comm.rank == 0)
    assert sum(h["active_ranks"] for h in where["hosts"].values()) == 1
    assert sum(h["resident_ranks"] for h in where["hosts"].values()) == comm.size
    assert where["cores"] >= 1


def test_too_many_ranks_raises_on_every_rank(comm):
    with pytest.raises(ValueError, match=f"between 1 and {comm.size}"):
        run_point(inner_point(comm.size + 1), comm)


def test_bad_kernel_input_raises_on_every_rank_including_idle_ones(comm):
    # n smaller than the rank count fails inside the sub-communicator; idle ranks must not hang
    with pytest.raises(ValueError, match="vector length n must be at least the number of ranks"):
        run_point(inner_point(comm.size, size=comm.size - 1 if comm.size > 1 else 0), comm)
    comm.Barrier()


def test_experiment_over_all_rank_counts_derives_speedup(comm):
    spec = SpeedupSpec("inner", nranks=list(range(1, comm.size + 1)), sizes=[5000], variants=["c"], repeats=2,
                       params={"loops": 2})
    result = run_experiment(spec, lambda p: run_point(p, comm))
    assert [p["nranks"] for p in result.points] == list(range(1, comm.size + 1))
    assert result.points[0]["speedup"] == 1.0
    assert all(p["efficiency"] > 0 for p in result.points)


@pytest.mark.parametrize("place", ["packed", "spread"])
def test_a_point_takes_its_ranks_by_placement_over_the_hosts(comm, monkeypatch, place):
    """Ranks pretend to run on two hosts, alternating (a cyclic distribution): a packed point
    of two ranks stays on one host where it can, a spread one takes a rank of each."""
    import socket

    from mpiworkbench.speedup import analysis

    monkeypatch.setattr(socket, "gethostname", lambda: f"node{comm.rank % 2}")
    for nranks in range(1, comm.size + 1):
        record = run_point(inner_point(nranks, "c", place=place), comm)
        hosts = record["placement"]["hosts"]
        active = {host: h["active_ranks"] for host, h in hosts.items()}
        assert sum(active.values()) == nranks and record["verify"]["ok"]
        # packed: node0 holds ranks 0, 2, … and fills first; spread: node0 and node1 in turn
        on_node0 = min(nranks, (comm.size + 1) // 2) if place == "packed" else (nranks + 1) // 2
        assert active["node0"] == on_node0, (place, nranks, active)
        assert analysis.nodes(record) == (1 if on_node0 == nranks else 2)


def test_a_point_with_an_unknown_placement_fails_on_every_rank(comm):
    with pytest.raises(ValueError, match="placement must be one of packed, spread; got 'scattered'"):
        run_point(inner_point(comm.size, place="scattered"), comm)
    comm.Barrier()
