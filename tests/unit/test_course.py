"""The nbgrader course (mpiworkbench.course): built from the notebooks' one source, released by
nbgrader's own ``generate_assignment`` with nothing of the solutions in it. Autograding on a
cluster is tested in tests/notebooks/test_course_autograde.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mpiworkbench import course, exercises
from mpiworkbench.cli import main

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
WITH_EXERCISES = [p for p in sorted(NOTEBOOKS.glob("*.ipynb"))
                  if exercises.answer_cells(nbformat.read(p, as_version=4))]


def nbgrader(course_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """nbgrader's own command line, run in the course directory as from a virtual environment
    that is not activated (its ``bin/`` not on PATH: the course's config finds ``alembic``)."""
    here = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != here)
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course_dir, env={**os.environ, "PATH": path},
                          capture_output=True, text=True, timeout=600)


def solution_lines(notebook: str) -> set[str]:
    """The lines of *notebook*'s reference solutions that learners are not shown anywhere in
    the notebook (some answers complete a sketch the notebook gives)."""
    nb = nbformat.read(NOTEBOOKS / f"{notebook}.ipynb", as_version=4)
    shown = {line.strip() for cell in nb.cells for line in cell.source.splitlines()}
    return {line.strip() for entry in exercises.solutions(notebook).values()
            for line in entry["solution"].splitlines()
            if line.strip() and not line.strip().startswith("#") and line.strip() not in shown}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The whole course, written by the CLI and released by nbgrader (one ``generate_assignment``
    of every assignment: nbgrader globs the assignment name, as a teacher may)."""
    directory = tmp_path_factory.mktemp("course")
    assert main(["course", "--nbgrader", str(directory), "--notebooks", str(NOTEBOOKS)]) == 0
    done = nbgrader(directory, "generate_assignment", "*")
    assert done.returncode == 0, done.stdout + done.stderr
    return directory


def test_every_notebook_with_exercises_is_an_assignment(released):
    assert sorted(p.name for p in (released / "source").iterdir()) == [p.stem for p in WITH_EXERCISES]
    assert sorted(p.name for p in (released / "release").iterdir()) == [p.stem for p in WITH_EXERCISES]


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_source_has_solution_and_locked_graded_check_cells(released, path):
    nb = nbformat.read(released / "source" / path.stem / path.name, as_version=4)
    answers = exercises.answer_cells(nb)
    graded = [c.metadata["nbgrader"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert sorted(g["grade_id"] for g in graded) == sorted(f"{name}-check" for _, name in answers)
    assert all(g["locked"] and g["points"] == course.POINTS and not g["solution"] for g in graded)
    for index, name in answers:
        cell = nb.cells[index]
        assert cell.metadata["nbgrader"]["solution"] and cell.metadata["nbgrader"]["grade_id"] == name
        assert course.BEGIN_SOLUTION in cell.source and course.END_SOLUTION in cell.source
    # the source holds the solutions the release must not (so the leak check below can fail)
    assert solution_lines(path.stem) <= {line.strip() for cell in nb.cells for line in cell.source.splitlines()}


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_the_release_is_the_learners_notebook_with_no_solution_in_it(released, path):
    release = nbformat.read(released / "release" / path.stem / path.name, as_version=4)
    student = nbformat.read(path, as_version=4)
    text = "\n".join(cell.source for cell in release.cells)
    hidden = solution_lines(path.stem)
    assert hidden, "a solution that shows nothing new cannot be checked for leaks"
    leaked = sorted(hidden & {line.strip() for line in text.splitlines()})
    assert not leaked, f"solution lines in the release: {leaked}"
    assert course.BEGIN_SOLUTION not in text and "### END" not in text
    # every answer cell is exactly the blank the notebook gives learners
    for index, _ in exercises.answer_cells(student):
        assert release.cells[index].source.rstrip("\n") == student.cells[index].source.rstrip("\n")
    assert [c.source for c in release.cells] != [] and len(release.cells) == len(student.cells)


def test_the_course_config_is_read_by_nbgrader(released):
    """nbgrader only logs a broken nbgrader_config.py and goes on without it: make sure it loads."""
    done = nbgrader(released, "generate_assignment", WITH_EXERCISES[0].stem, "--force", "--debug")
    assert done.returncode == 0
    assert "Exception while loading config file" not in done.stdout + done.stderr


def test_unknown_or_exercise_less_notebooks_are_named(tmp_path, capsys):
    assert main(["course", "--nbgrader", str(tmp_path / "c"), "--notebooks", str(NOTEBOOKS),
                 "--only", "00_start_here,nope"]) == 2
    err = capsys.readouterr().err
    assert "'nope'" in err and "00_start_here" in err
    assert main(["course", "--nbgrader", str(tmp_path / "c"), "--notebooks", str(tmp_path)]) == 2
    assert "no notebooks with exercises" in capsys.readouterr().err
    assert main(["course", "--nbgrader", str(tmp_path / "c"), "--notebooks", str(NOTEBOOKS),
                 "--timeout", "60", "--cell-timeout", "30"]) == 2
    assert "cell_timeout=30 must exceed timeout=60" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_a_solution_with_another_cell_magic_than_its_blank_is_refused():
    with pytest.raises(ValueError, match="make them the same cell magic"):
        course._solution_cell("x = ...  # YOUR ANSWER", "%%px\nx = 1\n", "t-1")
    assert course._solution_cell("%%px\nx = ...", "%%px\nx = 1\n", "t-1").splitlines() == [
        "%%px", "x = ...", course.BEGIN_SOLUTION, "x = 1", course.END_SOLUTION]


def test_under_nbgrader_a_blank_fails_and_a_right_answer_returns_no_score(monkeypatch, capsys):
    monkeypatch.setenv(exercises.GRADING_VARIABLE, "autograde")
    with pytest.raises(exercises.WrongAnswer, match="t-5: not answered"):
        exercises.check("t-5", ..., lambda v: True, hint="h")
    assert exercises.check("t-5", 1, lambda v: v == 1, hint="h") is None
    assert "t-5: right." in capsys.readouterr().out
