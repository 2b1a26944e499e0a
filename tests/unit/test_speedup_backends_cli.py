"""`mpiworkbench speedup … --backend …` from a shell (mpiexec started by the CLI), the
backend figure, the seed data it draws beside the live points, and the MPICH yield option."""

import json

import pytest
from matplotlib.figure import Figure

from mpiworkbench import seeds
from mpiworkbench.cli import main
from mpiworkbench.core import launch
from mpiworkbench.plot.speedup import backend_figure
from mpiworkbench.speedup import analysis
from mpiworkbench.speedup.analysis import SpeedupResult
from mpiworkbench.speedup.plan import SpeedupSpec

ALL = ("c", "mpi4py-buf", "mpi4py-obj", "numba-mpi")


@pytest.mark.parametrize(
    "experiment, size",
    [("wave", ["--mesh", "9", "--steps", "2"]), ("cg", ["--mesh", "15"]), ("heat", ["--grid", "12", "--steps", "4"])],
)
def test_every_backend_and_rank_count_has_time_speedup_efficiency_and_ratio_to_c(tmp_path, capsys, experiment, size):
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    code = main(["speedup", experiment, "--np", "1,2", "--backend", ",".join(ALL), *size, "--repeats", "2",
                 "--json", str(out), "--plot", str(png)])
    assert code == 0
    data = json.loads(out.read_text())
    points = data["points"]
    assert sorted((p["backend"], p["nranks"]) for p in points) == sorted((b, n) for b in ALL for n in (1, 2))
    for p in points:  # numba-mpi needs its whole world: every count ran in a world of its own
        assert p["world"] == "own" and p["verify"]["ok"]
        for key in ("median", "speedup", "efficiency", "ratio_to_c"):
            assert p[key] > 0, (key, p["variant"], p["nranks"])
        assert (p["ratio_to_c"] == 1.0) == (p["backend"] == "c")
    digests = {(p["nranks"], p["verify"]["field_digest"]) for p in points}
    assert len(digests) == 2  # every backend computed the same field at each rank count
    printed = capsys.readouterr().out
    assert "numba-mpi / C" in printed and png.stat().st_size > 0


def test_backends_only_where_the_experiment_has_them(capsys):
    assert main(["speedup", "wave", "--np", "1", "--backend", "pypar"]) == 2
    assert "historic modules are syntax tables only" in capsys.readouterr().err
    with pytest.raises(ValueError, match="crosses only numpy, numba, c"):
        SpeedupSpec("wave", [1], variants=["numpy/sendrecv"], backends=["c"]).resolved()


def crossed_result(experiment="wave"):
    r = SpeedupResult(experiment)
    for backend, t in (("c", 1.0), ("mpi4py-buf", 1.5), ("mpi4py-obj", 3.0)):
        for n in (1, 2):
            r.add({"experiment": experiment, "variant": f"numpy@{backend}", "backend": backend,
                   "base_variant": "numpy", "nranks": n, "size": 9, "times": [t / n, t / n]})
    return r


def test_ratio_to_c_and_the_ratio_table():
    r = crossed_result()
    by = {(p["backend"], p["nranks"]): p for p in r.points}
    assert by["mpi4py-obj", 2]["ratio_to_c"] == pytest.approx(3.0)
    assert by["mpi4py-buf", 1]["ratio_to_best_c"] == pytest.approx(1.5)
    rows = analysis.ratio_rows(r)
    assert [(row["nranks"], row["c"], row["mpi4py-obj"]) for row in rows] == [(1, 1.0, 3.0), (2, 1.0, 3.0)]
    assert "| numpy | 9 | 2 | 1.00 | 1.50 | 3.00 |" in analysis.format_ratio_table(r, "mesh", markdown=True)


def test_backend_figure_log2_c_reference_and_the_thesis_band():
    fig = backend_figure(crossed_result(), "mesh", title="wave")
    assert isinstance(fig, Figure)
    ax_t, ax_s, ax_r = fig.axes[:3]
    assert all(ax.get_xscale() == "log" and ax.get_yscale() == "log" for ax in (ax_t, ax_s, ax_r))
    labels = [line.get_label() for line in ax_r.get_lines()]
    assert "C (reference)" in labels
    assert any(label.startswith("then: thesis §6.1.4, C 8-10x") for label in labels)
    assert {t.get_text() for t in ax_r.texts} >= {"1.50x", "3.00x"}


def test_heat_figure_has_report_003_beside():
    fig = backend_figure(crossed_result("heat"), "grid")
    assert any(line.get_label().startswith("then: report 003 Table 1") for line in fig.axes[1].get_lines())


def test_seed_data_cite_their_source_and_machine():
    for name in seeds.FILES:
        data = seeds.load(name)
        assert data["machine"] and data["seed"].endswith(".txt")
    assert seeds.wave_ratio_band()[:2] == (8.0, 10.0)
    table = seeds.heat_table("1000x1000")
    assert table["nranks"][:3] == ["seq", 1, 2] and table["time_s"][-1] == 0.284789
    thesis = seeds.load("thesis")["table_2_1"]
    assert thesis["c"]["time_s"][0] / thesis["c"]["time_s"][1] == pytest.approx(thesis["c"]["speedup"][1], abs=1e-3)
    with pytest.raises(ValueError, match="choose one of"):
        seeds.load("nope")


def test_yield_while_waiting_sets_the_mpich_cvars(monkeypatch):
    monkeypatch.delenv(launch.YIELD_VARIABLE, raising=False)
    for var in launch.YIELD_WHILE_WAITING:
        monkeypatch.delenv(var, raising=False)
    assert not set(launch.YIELD_WHILE_WAITING) & set(launch.rank_environment())
    assert launch.rank_environment(True)["MPIR_CVAR_ENABLE_HEAVY_YIELD"] == "1"
    monkeypatch.setenv(launch.YIELD_VARIABLE, "1")
    assert launch.rank_environment()["MPIR_CVAR_ENABLE_HEAVY_YIELD"] == "1"
    monkeypatch.setenv("MPIR_CVAR_ENABLE_HEAVY_YIELD", "0")  # the user's own choice wins
    assert launch.rank_environment()["MPIR_CVAR_ENABLE_HEAVY_YIELD"] == "0"


def test_a_world_of_its_own_gets_the_same_arguments_but_its_own_json():
    from mpiworkbench.cli.speedup import _part_argv

    argv = ["speedup", "wave", "--np", "1,2", "--json", "out.json", "--plot=out.png", "--backend", "c,numba-mpi"]
    assert _part_argv(argv, "/tmp/part.json") == [
        "speedup", "wave", "--np", "1,2", "--backend", "c,numba-mpi", "--json", "/tmp/part.json"]


def test_tables_show_flops_when_the_kernel_counts_its_work():
    r = SpeedupResult("heat")
    for n, t in ((1, 2.0), (2, 1.0)):
        r.add({"experiment": "heat", "variant": "nonblocking", "nranks": n, "size": 12, "times": [t], "flops": 4e9})
    assert [p["flop_s"] for p in r.points] == [2e9, 4e9]
    text = analysis.format_table(r, "grid")
    assert "GFLOP/s" in text.splitlines()[0] and text.splitlines()[2].split()[-1] == "4"
    assert "<th>GFLOP/s</th>" in analysis.format_html(r, "grid")


def test_place_measures_each_placement_and_names_a_bad_one(tmp_path, capfd):
    out = tmp_path / "placed.json"
    code = main(["speedup", "inner", "--np", "1,2", "--n", "2000", "--variants", "c", "--repeats", "1",
                 "--place", "packed,spread", "--json", str(out)])
    assert code == 0
    points = json.loads(out.read_text())["points"]
    assert sorted((p["place"], p["nranks"]) for p in points) == [("packed", 1), ("packed", 2), ("spread", 1),
                                                                ("spread", 2)]
    # one host: both placements took the same ranks, all on it
    assert {analysis.nodes(p) for p in points} == {1}
    assert "c [spread] n=2000" in capfd.readouterr().out
    assert main(["speedup", "inner", "--np", "1", "--place", "scattered"]) == 2
    assert "placement must be one of packed, spread; got 'scattered'" in capfd.readouterr().err
