"""Backends as a speedup dimension (thesis Figs. 6.2-6.5, 6.10-6.13), in the running world:
every backend computes the same field, and every point carries time, speedup, efficiency
and its ratio to C; heat adds FLOP/s and report 003's per-rank max/min/avg times."""

import json
import os

import pytest
from mpi4py import MPI

from mpiworkbench.cli import main

COMM = MPI.COMM_WORLD
COUNTS = ",".join(str(n) for n in range(1, COMM.size + 1))
ANY_COMM_BACKENDS = ("c", "mpi4py-buf", "mpi4py-obj")
SMALL = {"wave": ["--mesh", "9", "--steps", "2"], "cg": ["--mesh", "15"], "heat": ["--grid", "12", "--steps", "5"]}


def run(directory, experiment, counts, backends, *extra):
    path = os.path.join(directory, "out.json")
    code = main(["speedup", experiment, "--np", counts, "--backend", ",".join(backends), *SMALL[experiment],
                 "--repeats", "2", "--warmup", "0", *extra, "--json", path])
    assert code == 0
    COMM.Barrier()
    return json.loads(open(path).read()) if COMM.rank == 0 else None


def check_points(data, backends, counts):
    points = data["points"]
    assert data["params"]["backends"] == list(backends)
    assert sorted((p["backend"], p["nranks"]) for p in points) == sorted((b, n) for b in backends for n in counts)
    for p in points:
        assert p["variant"] == f"{p['base_variant']}@{p['backend']}"
        assert p["median"] > 0 and p["speedup"] > 0 and p["efficiency"] > 0
        assert p["verify"]["ok"], p["verify"]
        c = next(q for q in points if q["backend"] == "c" and q["nranks"] == p["nranks"])
        assert p["ratio_to_c"] == pytest.approx(p["median"] / c["median"])
        rank_times = p["rank_times"]
        assert len(rank_times["max"]) == len(rank_times["min"]) == len(rank_times["avg"]) == 2
        for lo, avg, hi in zip(rank_times["min"], rank_times["avg"], rank_times["max"]):
            assert 0 < lo <= avg * (1 + 1e-12) and avg <= hi * (1 + 1e-12)
    return points


@pytest.mark.parametrize("experiment", ["wave", "heat"])
def test_every_backend_computes_the_same_field_bit_for_bit(experiment, shared_tmp):
    data = run(shared_tmp, experiment, COUNTS, ANY_COMM_BACKENDS)
    if COMM.rank == 0:
        points = check_points(data, ANY_COMM_BACKENDS, range(1, COMM.size + 1))
        # the same field for every backend and (both solvers are decomposition-independent) every rank count
        assert len({p["verify"]["field_digest"] for p in points}) == 1


def test_cg_on_every_backend_converges_to_the_same_solution(shared_tmp):
    data = run(shared_tmp, "cg", COUNTS, ANY_COMM_BACKENDS)
    if COMM.rank == 0:
        points = check_points(data, ANY_COMM_BACKENDS, range(1, COMM.size + 1))
        for n in range(1, COMM.size + 1):
            at_n = [p["verify"] for p in points if p["nranks"] == n]
            assert len({v["iterations"] for v in at_n}) == 1
            errors = [v["max_error"] for v in at_n]
            assert max(errors) - min(errors) <= 1e-12


def test_heat_reports_flops_per_second(shared_tmp):
    data = run(shared_tmp, "heat", COUNTS, ("c",))
    if COMM.rank == 0:
        for p in data["points"]:
            assert p["flops"] == 8 * (12 - 2) * 12 * 5  # FLOPS_PER_POINT x updated points x steps
            assert p["flop_s"] == pytest.approx(p["flops"] / p["median"])


def test_numba_mpi_runs_on_all_of_the_world(shared_tmp):
    backends = ("c", "numba-mpi")
    data = run(shared_tmp, "wave", str(COMM.size), backends)
    if COMM.rank == 0:
        points = check_points(data, backends, [COMM.size])
        assert len({p["verify"]["field_digest"] for p in points}) == 1


@pytest.mark.mpi_min(2)
def test_numba_mpi_on_part_of_the_world_is_refused_on_every_rank(capsys):
    if COMM.size < 2:
        pytest.skip("needs 2 ranks")
    code = main(["speedup", "wave", "--np", f"1,{COMM.size}", "--backend", "c,numba-mpi", *SMALL["wave"],
                 "--repeats", "1"])
    assert code == 2
    err = capsys.readouterr().err
    if COMM.rank == 0:
        assert "talks only on MPI_COMM_WORLD" in err
