"""`mpiworkbench speedup …` inside an existing MPI world: runs every point, writes the JSON on rank 0."""

import json
import os

from mpi4py import MPI

from mpiworkbench.cli import main
COMM = MPI.COMM_WORLD


def test_wave_speedup_writes_times_speedups_and_efficiencies(shared_tmp):
    path = os.path.join(shared_tmp, "out.json")
    counts = ",".join(str(n) for n in range(1, COMM.size + 1))
    code = main(["speedup", "wave", "--np", counts, "--mesh", "9", "--steps", "2", "--repeats", "2", "--json", path])
    assert code == 0
    COMM.Barrier()
    if COMM.rank == 0:
        data = json.loads(open(path).read())
        assert [p["nranks"] for p in data["points"]] == list(range(1, COMM.size + 1))
        for p in data["points"]:
            assert len(p["times"]) == 2 and p["median"] > 0
            assert p["speedup"] > 0 and p["efficiency"] > 0
            assert p["verify"]["ok"]


def test_more_ranks_than_the_world_is_an_error_on_every_rank(capsys):
    code = main(["speedup", "inner", "--np", str(COMM.size + 1), "--n", "100"])
    assert code == 2  # every rank fails cleanly (no hang) …
    err = capsys.readouterr().err
    if COMM.rank == 0:  # … and rank 0 says why, once for the whole world
        assert f"this MPI world has {COMM.size}" in err
    else:
        assert err == ""


def test_trace_writes_the_pop_factors_of_every_point(shared_tmp, capsys):
    path = os.path.join(shared_tmp, "traced.json")
    counts = ",".join(str(n) for n in range(1, COMM.size + 1))
    code = main(["speedup", "wave", "--np", counts, "--mesh", "9", "--steps", "2", "--repeats", "1", "--trace",
                 "--json", path])
    assert code == 0
    COMM.Barrier()
    if COMM.rank == 0:
        data = json.loads(open(path).read())
        assert data["params"]["trace"] is True
        for p in data["points"]:
            f = p["pop"]
            assert f["nranks"] == p["nranks"] and len(f["useful"]) == p["nranks"] and f["dropped"] == 0
            for key in ("load_balance", "communication", "serialisation", "transfer", "parallel",
                        "computation_scalability", "global_efficiency"):
                assert 0 < f[key] <= 1.05 or key == "computation_scalability", (key, f)
            assert abs(f["load_balance"] * f["communication"] - f["parallel"]) < 1e-9
        assert data["points"][0]["pop"]["computation_scalability"] == 1.0
        assert "POP factors" in capsys.readouterr().out
