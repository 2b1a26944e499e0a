"""The exercise convention (mpiworkbench.exercises): blanks in the notebooks, checks that can
fail, solutions and wrong answers kept outside the notebooks, and the teachers' export."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mpiworkbench import exercises

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(NOTEBOOKS.glob("*.ipynb"))
WITH_EXERCISES = [p for p in ALL if exercises.answer_cells(nbformat.read(p, as_version=4))]


def test_check_says_right_and_returns_true(capsys):
    assert exercises.check("t-1", 42, lambda v: v == 42, hint="h", right="Well done.") is True
    assert capsys.readouterr().out == "Exercise t-1: right. Well done.\n"


def test_check_on_a_blank_says_what_to_do_and_does_not_raise(capsys):
    def stub(a, b):
        ...

    for answer in (..., [1.0, ...], {"a": ...}, stub):
        assert exercises.check("t-2", answer, lambda v: 1 / 0, hint="h") is False
        assert "not answered yet" in capsys.readouterr().out


def test_a_wrong_answer_raises_with_the_hint():
    with pytest.raises(exercises.WrongAnswer, match=r"Exercise t-3: not right yet\. Hint: count again"):
        exercises.check("t-3", 41, lambda v: v == 42, hint="count again")


def test_a_check_that_raises_on_the_answer_reports_it_as_wrong():
    with pytest.raises(exercises.WrongAnswer, match=r"raised TypeError.*Hint: a number"):
        exercises.check("t-4", "forty-two", lambda v: v + 1 == 43, hint="a number")


def test_a_function_with_a_body_is_not_a_blank():
    def answered(x):
        return x

    assert not exercises.blank(answered) and not exercises.blank(0) and not exercises.blank([1, 2])


def test_solution_sections_are_read_per_name_and_kind():
    found = exercises.solutions("01_syntax_side_by_side")
    assert set(found["01-allgather"]) == {"solution", "wrong"}
    assert "answer_allgather" in found["01-allgather"]["solution"]
    assert exercises.solutions("no_such_notebook") == {}


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_answer_cells_hold_a_blank_and_have_a_solution_and_a_wrong_answer(path):
    nb = nbformat.read(path, as_version=4)
    known = exercises.solutions(path.stem)
    names = [name for _, name in exercises.answer_cells(nb)]
    assert len(names) == len(set(names)), f"answer cell names repeat: {names}"
    assert set(known) == set(names), "solution sections and answer cells must match one to one"
    for index, name in exercises.answer_cells(nb):
        source = nb.cells[index].source
        assert "..." in source and "YOUR ANSWER" in source, f"cell {index} ({name}) shows no blank"
        assert set(known[name]) == {"solution", "wrong"}, name
        assert known[name]["solution"].strip() != known[name]["wrong"].strip(), name
        # the answer is not in the notebook: no line of the solution's answer appears there
        assert known[name]["solution"].strip() not in source, f"cell {index} ({name}) holds its solution"
        checks = [c for c in nb.cells[index + 1:] if "check" in c.metadata.get("tags", [])]
        assert checks and any(re.search(rf'check\(\s*"{re.escape(name)}', c.source) for c in checks), \
            f"no check cell checks {name}"


def test_inject_names_a_missing_solution():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = ...  # YOUR ANSWER")
    cell.metadata.update(tags=["exercise"], exercise="nowhere-1")
    nb.cells.append(cell)
    with pytest.raises(KeyError, match="nowhere-1"):
        exercises.inject(nb, "01_syntax_side_by_side", "solution")
    with pytest.raises(ValueError, match="'right'"):
        exercises.inject(nb, "01_syntax_side_by_side", "right")


def test_the_teachers_export_writes_both_versions(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mpiworkbench", "exercises", "--notebooks", str(NOTEBOOKS),
         "--student", str(tmp_path / "student"), "--solutions", str(tmp_path / "solutions")],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for path in WITH_EXERCISES:
        student = nbformat.read(tmp_path / "student" / path.name, as_version=4)
        teacher = nbformat.read(tmp_path / "solutions" / path.name, as_version=4)
        for index, name in exercises.answer_cells(student):
            assert "YOUR ANSWER" in student.cells[index].source
            assert teacher.cells[index].source.strip() == exercises.solutions(path.stem)[name]["solution"].strip()
    assert sorted(p.name for p in (tmp_path / "student").glob("*.ipynb")) == [p.name for p in ALL]


def test_every_solutions_file_belongs_to_a_notebook_with_answer_cells():
    stems = {p.stem for p in WITH_EXERCISES}
    files = {p.stem for p in exercises.SOLUTIONS.glob(f"*{exercises.SUFFIX}")}
    assert files == stems, f"solutions without answer cells: {sorted(files - stems)}; " \
                           f"answer cells without solutions: {sorted(stems - files)}"


def test_a_right_message_that_uses_the_answer_is_made_only_when_it_is_right(capsys):
    def blank_function(mesh):
        ...

    def said(f):
        return f"predicted {f(17):.3f}"  # a blank function returns None: formatting it would fail

    assert exercises.check("t-3", blank_function, lambda f: True, hint="h", right=said) is False
    assert "not answered yet" in capsys.readouterr().out
    assert exercises.check("t-3", lambda mesh: mesh / 10, lambda f: f(17) == 1.7, hint="h", right=said) is True
    assert "Exercise t-3: right. predicted 1.700" in capsys.readouterr().out


def test_solutions_files_are_python_and_their_commented_magics_come_back():
    """The solutions are Jupytext percent-format .py files: a magic is commented there and
    restored in the code injected into the notebook."""
    text = (exercises.SOLUTIONS / "00_start_here.py").read_text()
    assert "\n# %%px --no-stream\n" in text and "\n%%px" not in text
    compile(text, "00_start_here.py", "exec")
    injected = exercises.solutions("00_start_here")["00-allreduce-gather"]["solution"]
    assert injected.startswith("%%px --no-stream\n") and "# %%px" not in injected
