"""`mpiworkbench speedup … --mpi mpich,openmpi,impi`: one mpiexec per MPI implementation, one
result side by side — every point names its implementation, each one's points are curves of
their own (speedup and ratio to C within it), each library's version is recorded — and clear
errors for a bad name, an implementation not installed, a failing job (issue 22)."""

import json

import pytest

from mpiworkbench.cli import main
from mpiworkbench.core import implementations
from mpiworkbench.speedup import analysis
from mpiworkbench.speedup.analysis import SpeedupResult
from tests.unit.test_bench_mpi_implementations import failing_installation

INSTALLED = [impl.name for impl in implementations.REGISTRY if impl.installed()]
QUICK = ["speedup", "inner", "--np", "1,2", "--n", "2000", "--variants", "c", "--repeats", "1", "--warmup", "0",
         "--timeout", "120"]


def test_points_per_implementation_with_their_library_versions(tmp_path, capfd):
    if len(INSTALLED) < 2:
        pytest.skip(f"needs two installed MPI implementations; installed: {INSTALLED} "
                    "(python -m mpiworkbench.core.implementations install)")
    out = tmp_path / "side.json"
    assert main([*QUICK, "--mpi", ",".join(INSTALLED), "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert sorted((p["mpi"], p["nranks"]) for p in data["points"]) == sorted((m, n) for m in INSTALLED for n in (1, 2))
    assert list(data["environments"]) == INSTALLED and data["failed"] == {}
    for name in INSTALLED:
        assert implementations.get(name).marker in data["environments"][name]["library_version"]
    result = analysis.load(out)
    assert set(result.series()) == {(f"c ({m})", 2000) for m in INSTALLED}
    for pts in result.series().values():  # each implementation's speedup against its own 1 rank
        assert len({p["mpi"] for p in pts}) == 1 and pts[0]["speedup"] == 1.0
    printed = capfd.readouterr().out
    assert "MPI implementations side by side" in printed and f"c ({INSTALLED[1]}) n=2000" in printed


def test_one_implementation_keeps_its_curve_names(tmp_path):
    out = tmp_path / "one.json"
    assert main([*QUICK, "--np", "1", "--json", str(out)]) == 0
    result = analysis.load(out)
    assert set(result.series()) == {("c", 2000)} and result.points[0]["mpi"] == implementations.current().name
    assert list(result.environments) == [implementations.current().name]


def test_ratios_to_c_stay_within_an_implementation():
    r = SpeedupResult("wave")
    for mpi, c_time in (("mpich", 1.0), ("openmpi", 4.0)):
        for backend, factor in (("c", 1.0), ("mpi4py-buf", 2.0)):
            r.add({"experiment": "wave", "variant": f"numpy@{backend}", "backend": backend, "base_variant": "numpy",
                   "nranks": 1, "size": 9, "times": [c_time * factor], "mpi": mpi})
    assert {p["ratio_to_c"] for p in r.points} == {1.0, 2.0}  # not 8 (openmpi's buf over mpich's C)
    assert [row["variant"] for row in analysis.ratio_rows(r)] == ["numpy (mpich)", "numpy (openmpi)"]
    back = SpeedupResult.from_dict(json.loads(analysis.to_json(r)))
    assert back.several_mpi and set(back.series()) == {(f"numpy@{b} ({m})", 9) for b in ("c", "mpi4py-buf")
                                                       for m in ("mpich", "openmpi")}


def test_bad_and_missing_implementations_are_clear_errors(tmp_path, monkeypatch, capsys):
    assert main([*QUICK, "--mpi", "mpich,lam"]) == 2
    assert "choose one of mpich, openmpi, impi, site" in capsys.readouterr().err
    monkeypatch.setenv(implementations.ROOT_VARIABLE, str(tmp_path))  # an empty root: nothing installed there
    assert main([*QUICK, "--mpi", "impi"]) == 2
    err = capsys.readouterr().err
    assert "Intel MPI is not installed" in err and f"pip install --prefix {tmp_path / 'impi'}" in err


def test_a_failing_implementation_is_named_and_the_others_points_kept(tmp_path, monkeypatch, capfd):
    if "mpich" not in INSTALLED:
        pytest.skip("needs the venv's MPICH (pip install mpich)")
    failing_installation(tmp_path, monkeypatch, "impi", 5)
    out = tmp_path / "partial.json"
    assert main([*QUICK, "--mpi", "impi,mpich", "--json", str(out)]) == 5
    data = json.loads(out.read_text())
    assert {p["mpi"] for p in data["points"]} == {"mpich"} and "code 5" in data["failed"]["impi"]
    assert "FAILED impi" in capfd.readouterr().err
