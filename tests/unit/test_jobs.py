"""A session saved as a batch job, without MPI: the journal (what it keeps, merges, drops), the
job's texts (``job.py`` reads like the cells and compiles, ``run.sh`` and ``job.sbatch`` are valid
shell with the allocation), the comparison of a run with the session (equal, differing at the
session's size and at another, a failed call, a job cut short, values) and the clear errors.
The runs themselves, on ranks: ``tests/notebooks/test_job_export.py``; under Slurm:
``tests/cluster/test_job_sbatch.py``."""

from __future__ import annotations

import ast
import json
import subprocess

import numpy as np
import pytest

from mpiworkbench.cli import main
from mpiworkbench.client.calls import journal as journal_module
from mpiworkbench.client.calls.journal import Journal, outcome_of
from mpiworkbench.client.errors import ExecutionTimeout
from mpiworkbench.core import machine, objects
from mpiworkbench.drivers.job import _value_specs
from mpiworkbench.jobs import compare, layout, render


def scaled(k):
    return k * 2


# ---------------------------------------------------------------------- the journal
def test_the_journal_keeps_cells_and_calls_in_order_and_not_the_calls_that_only_look():
    journal = Journal()
    cell = journal.cell("x = 1\nprint(x)\n", world=7)
    journal.ended(cell, "ok", printed={0: "1\n", 1: "1\n"})
    assert journal.call(machine.rank_info, (), {}, "wb.info", world=7) is None
    call = journal.call(scaled, (3,), {}, "wb.run: scaled", world=7)
    journal.ended(call, "ok")
    assert [e.kind for e in journal.of_world(7)] == ["cell", "call"]
    assert cell.digests == {0: layout.digest("1\n"), 1: layout.digest("1\n")}
    assert call.label == "wb.run: scaled(3)" and call.function.endswith(":scaled") and call.payload
    assert journal.of_world(8) == []  # another engine set (a restarted world) has none of them


def test_a_call_repeated_with_the_same_arguments_is_one_entry_with_a_count_and_others_are_not():
    journal = Journal()
    journal.ended(journal.call(objects.create, ("obj-1", "mpiworkbench.solvers.wave.solver:WaveSolver", (), {"mesh": 9}),
                               {}, "wb.run: create", world=1), "ok")
    for _ in range(5):  # a panel's Play: the same frame again and again
        journal.ended(journal.call(objects.call_many, ("obj-1", [("advance", (1,)), ("picture", (64,))]), {},
                                   "wave: frame", world=1), "ok")
    journal.ended(journal.call(objects.call, ("obj-1", "advance", (2,), {}), {}, "wave: step", world=1), "ok")
    failed = journal.call(objects.call, ("obj-1", "advance", (2,), {}), {}, "wave: step", world=1)
    journal.ended(failed, "failed", "RankFailure: boom")
    entries = journal.of_world(1)
    assert [(e.label, e.repeat, e.outcome) for e in entries] == [
        ("wb.run: WaveSolver(mesh=9)", 1, "ok"),
        ("wave: WaveSolver.advance(1); WaveSolver.picture(64)", 5, "ok"),
        ("wave: WaveSolver.advance(2)", 1, "ok"),
        ("wave: WaveSolver.advance(2)", 1, "failed"),
    ]
    assert entries[-1].error == "RankFailure: boom"


def test_every_call_the_journal_leaves_out_names_a_function_that_exists():
    import importlib

    for name in journal_module.LOOKS:
        module, function = name.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_calls_made_while_paused_are_not_kept():
    journal = Journal()
    with journal.paused():
        assert journal.cell("print(1)", world=1) is None
        assert journal.call(scaled, (1,), {}, "wb.run", world=1) is None
    assert journal.call(scaled, (1,), {}, "wb.run", world=1) is not None


def test_the_journal_is_bounded_in_bytes_and_in_entries(monkeypatch):
    monkeypatch.setattr(journal_module, "KEEP_BYTES", 4096)
    monkeypatch.setattr(journal_module, "KEEP_ENTRIES", 3)
    journal = Journal()
    big = journal.call(scaled, (np.zeros(10_000),), {}, "wb.push", world=1)
    assert big.outcome == "not kept" and big.payload is None and "past the journal" in big.error
    for k in range(4):
        journal.ended(journal.call(scaled, (k,), {}, "wb.run", world=1), "ok")
    assert len(journal.entries) == 3 and journal.dropped == 2
    assert [e.label for e in journal.entries] == ["wb.run: scaled(1)", "wb.run: scaled(2)", "wb.run: scaled(3)"]


def test_an_outcome_is_named_by_how_the_call_ended():
    assert outcome_of(None) == "ok"
    assert outcome_of(KeyboardInterrupt()) == "interrupted"
    assert outcome_of(ExecutionTimeout([])) == "timeout"
    assert outcome_of(ValueError("x")) == "failed"


# ---------------------------------------------------------------------- the texts
SOURCES = ['import numpy as np\nx = np.arange(4)\nprint(x.sum())\n', 'print("""quoted""")', 'print("a\\nb")',
           "s = 'ends with a quote\"'", 'x = 1', '%matplotlib inline\nprint(1)', '']


@pytest.mark.parametrize("source", SOURCES)
def test_a_cell_is_written_as_a_literal_that_is_exactly_its_source(source):
    assert ast.literal_eval(render.literal(source)) == source


def _meta(n=2, calls=None, values=None, left_out=None):
    return {
        "format": layout.FORMAT, "name": "wave-run", "saved": "2026-11-29 10:00:00 UTC", "mpiworkbench": "0.1.0",
        "world": {"n": n, "hosts": ["node1", "node2"], "mpi": "site", "library": "MPICH 4.1", "python": "/opt/env/bin/python",
                  "launcher_line": "srun --mpi=pmi2 --kill-on-bad-exit=1", "launcher_choice": "srun",
                  "modules": ["gcc/12", "mpich/4.1"], "variables": {"MPIWORKBENCH_MPI": "site"}},
        "calls": calls if calls is not None else [
            {"number": 1, "kind": "cell", "label": "%%px: import numpy as np", "source": SOURCES[0], "trace": False,
             "ranks": None, "digests": {"0": layout.digest("6\n"), "1": layout.digest("6\n")}},
            {"number": 2, "kind": "call", "label": "wb.run: scaled(3)", "function": "__main__:scaled",
             "data": layout.data_file(2), "repeat": 4},
            {"number": 3, "kind": "cell", "label": "%%px --trace: total", "source": "total = 1\n", "trace": True,
             "ranks": [0], "digests": {"0": layout.digest("")}},
        ],
        "left_out": left_out if left_out is not None else [{"label": "%%px: 1/0", "outcome": "failed", "error": "ZeroDivisionError"}],
        "values": values or [],
        "minutes": 12,
    }


def test_job_py_compiles_and_lists_the_cells_the_calls_and_what_was_left_out():
    text = render.program(_meta())
    tree = ast.parse(text)
    calls = [node.value for node in tree.body if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)]
    assert [ast.unparse(c.func) for c in calls] == ["job.cell", "job.call", "job.cell", "job.finish"]
    assert ast.literal_eval(calls[0].args[1]) == SOURCES[0]  # the cell, as the user wrote it
    assert {k.arg: ast.literal_eval(k.value) for k in calls[2].keywords} == {"trace": True, "ranks": [0]}
    assert "(4 times in a row)" in text and "# left out: %%px: 1/0 (failed: ZeroDivisionError)" in text


def test_the_batch_script_asks_for_the_sessions_allocation_modules_mpi_and_launcher(tmp_path):
    text = render.sbatch(_meta(n=3))
    for line in ("#SBATCH --ntasks=3", "#SBATCH --nodes=2", "#SBATCH --time=00:12:00",
                 "module load gcc/12 mpich/4.1", "export MPIWORKBENCH_MPI=site", "export MPIWORKBENCH_LAUNCHER=srun"):
        assert line in text.splitlines(), (line, text)
    assert "srun --mpi=pmi2" in text and '-m mpiworkbench job run . --np "$SLURM_NTASKS"' in text
    for name, script in (("job.sbatch", text), ("run.sh", render.run_sh(_meta()))):
        (tmp_path / name).write_text(script)
        checked = subprocess.run(["bash", "-n", str(tmp_path / name)], capture_output=True, text=True)
        assert checked.returncode == 0, (name, checked.stderr)
    assert '--np "${1:-2}"' in render.run_sh(_meta())


def test_the_readme_says_what_was_captured_left_out_and_how_to_run_it():
    text = render.readme(_meta(values=[{"label": "u", "kind": "object", "key": "obj-1", "method": "gather"}]))
    for said in ("3 call(s) the ranks ran", "2 `%%px` cell(s)", "The values named at export", "u",
                 "Left out, failed: %%px: 1/0", "plots, widgets", "./run.sh 4", "sbatch job.sbatch"):
        assert said in text, said


def test_a_time_limit_leaves_room_and_is_never_under_ten_minutes():
    assert render.minutes_for(0.5) == 10 and render.minutes_for(600) == 35


# ---------------------------------------------------------------------- the comparison
def _job(tmp_path, meta, runs: dict[int, list[dict]], session_values=None, run_values=None):
    """A job directory with *meta* and, per rank, the records of a run at len(runs) ranks."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / layout.META).write_text(json.dumps(meta))
    out = layout.output_dir(tmp_path, len(runs))
    out.mkdir(parents=True)
    for rank, records in runs.items():
        (out / layout.RANK_RECORDS.format(rank=rank)).write_text(
            "".join(json.dumps({"rank": rank, **r}) + "\n" for r in records))
    if session_values is not None:
        np.savez(tmp_path / layout.SESSION_VALUES, **session_values)
    if run_values is not None:
        np.savez(out / layout.VALUES, **run_values)
    return tmp_path


def _ran(number, printed="", outcome="ok", **more):
    return {"number": number, "outcome": outcome, "stdout": printed, "digest": layout.digest(printed), "seconds": 0.1, **more}


def _two_ranks(first="6\n"):
    return {0: [_ran(1, first), _ran(2), _ran(3)], 1: [_ran(1, "6\n"), _ran(2), {"number": 3, "outcome": "skipped"}]}


def test_a_run_that_prints_what_the_session_printed_is_equal_and_its_cells_are_shown_as_px_shows_them(tmp_path):
    job = _job(tmp_path, _meta(values=[{"label": "u", "kind": "name", "name": "u"}]), _two_ranks(),
               session_values={"u": np.arange(3.0)}, run_values={"u": np.arange(3.0) + 1e-13})
    lines, code = compare.report(job, 2)
    assert code == compare.EQUAL, lines
    result = json.loads((layout.output_dir(job, 2) / layout.COMPARE).read_text())
    assert result["cells_differ"] == [] and result["values"]["u"]["equal"] and result["calls"][1]["outcome"] == "ok"
    cells = (layout.output_dir(job, 2) / layout.CELLS).read_text()
    assert "[1] %%px: import numpy as np\n[stdout:0, 1] 6" in cells


def test_at_the_sessions_size_a_cell_that_printed_otherwise_differs(tmp_path):
    lines, code = compare.report(_job(tmp_path, _meta(), _two_ranks(first="7\n")), 2)
    assert code == compare.DIFFERS and "1 differ: [1]" in "\n".join(lines)
    assert json.loads((layout.output_dir(tmp_path, 2) / layout.COMPARE).read_text())["calls"][0]["differing_ranks"] == [0]


def test_at_another_size_cells_are_compared_but_only_values_decide(tmp_path):
    runs = {r: [_ran(1, f"{r}\n"), _ran(2), _ran(3) if r == 0 else {"number": 3, "outcome": "skipped"}] for r in range(4)}
    meta = _meta(values=[{"label": "u", "kind": "name", "name": "u"}])
    lines, code = compare.report(_job(tmp_path, meta, runs, {"u": np.ones(2)}, {"u": np.ones(2)}), 4)
    assert code == compare.EQUAL and "shown, not required" in "\n".join(lines)
    result = json.loads((layout.output_dir(tmp_path, 4) / layout.COMPARE).read_text())
    assert result["calls"][0]["ranks_not_in_session"] == [2, 3]
    np.savez(layout.output_dir(tmp_path, 4) / layout.VALUES, u=np.array([1.0, 1.5]))
    lines, code = compare.report(tmp_path, 4)
    assert code == compare.DIFFERS and "  value u: DIFFERS: max |difference| 0.5" in lines


def test_a_failed_call_and_a_job_cut_short_fail(tmp_path):
    failed = {0: [_ran(1, "6\n"), _ran(2, outcome="failed", error="ValueError: no")], 1: [_ran(1, "6\n")]}
    lines, code = compare.report(_job(tmp_path / "a", _meta(), failed), 2)
    assert code == compare.FAILED and "failed: [2]" in "\n".join(lines)
    cut = {0: [_ran(1, "6\n")], 1: [_ran(1, "6\n")]}
    lines, code = compare.report(_job(tmp_path / "b", _meta(), cut), 2)
    assert code == compare.FAILED and "ended before call [2]" in "\n".join(lines)


# ---------------------------------------------------------------------- clear errors
def test_a_directory_that_is_not_a_job_or_of_another_format_is_refused_with_what_to_do(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="is not a job directory written by wb.export_job"):
        layout.read_meta(tmp_path)
    (tmp_path / layout.META).write_text(json.dumps({"format": 99, "mpiworkbench": "9.9"}))
    with pytest.raises(ValueError, match="format 99.*export the session again"):
        layout.read_meta(tmp_path)
    assert main(["job", "compare", str(tmp_path), "--np", "2"]) == 2
    assert "has not run at 2 rank(s)" in capsys.readouterr().err


def test_values_must_be_names_or_solver_handles():
    assert _value_specs(["total"]) == [{"label": "total", "kind": "name", "name": "total"}]
    with pytest.raises(ValueError, match="'a b' is not a Python name"):
        _value_specs(["a b"])
    with pytest.raises(ValueError, match="neither a name nor a solver handle"):
        _value_specs({"x": 3})
