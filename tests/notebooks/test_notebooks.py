"""Every notebook in notebooks/ is executed: a notebook that does not run is a failing test.

Here each starts its own two-rank cluster (no ``mpi`` cluster runs in the test's IPython
directory); ``test_notebooks_attached.py`` runs them all again on a three-rank cluster a user
started with ``ipcluster``, which their first cell attaches to.

Notebooks read ``MPIWORKBENCH_SMALL=1`` to use small sizes. Cells tagged
``raises-exception`` may raise (they show an error on purpose); any other error fails.
Exercises (:mod:`mpiworkbench.exercises`) are run twice: with the reference solutions in
their answer cells (every check says right) and with deliberately wrong answers (every
check fails with its hint).
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from mpiworkbench import exercises


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))
#: Seconds one cell may take before the notebook counts as broken.
CELL_TIMEOUT_S = int(os.environ.get("MPIWORKBENCH_CELL_TIMEOUT", "600"))


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in ALL), [p.name for p in ALL]


def run_notebook(path: Path, scratch: Path, answers: str = "solution") -> nbformat.NotebookNode:
    """Execute *path* in a fresh kernel (files it writes land in *scratch*) with the reference
    solutions (``answers="solution"``) or the deliberately wrong answers (``"wrong"``) in its
    answer cells; the executed notebook.

    With solutions, any error output outside cells tagged ``raises-exception`` fails, and
    every check must say "right". With wrong answers, every check cell must fail with a
    :class:`~mpiworkbench.exercises.WrongAnswer` that gives its hint, and nothing else may fail.
    """
    nb = exercises.inject(nbformat.read(path, as_version=4), path.stem, answers)
    checks = [i for i, cell in enumerate(nb.cells) if "check" in cell.metadata.get("tags", [])]
    if answers == "wrong":
        for i in checks:  # let the run go on past each failing check, to see them all fail
            nb.cells[i].metadata["tags"] = [*nb.cells[i].metadata.get("tags", []), "raises-exception"]
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        # files a notebook writes land in a scratch directory, not in the repository
        resources={"metadata": {"path": str(scratch)}},
    )
    client.execute()
    errors = {
        i: (out.get("ename"), out.get("evalue"))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    }
    allowed = {i for i, cell in enumerate(nb.cells) if "raises-exception" in cell.metadata.get("tags", [])}
    assert {i: e for i, e in errors.items() if i not in allowed} == {}
    for i in checks:
        if answers == "wrong":
            ename, evalue = errors.get(i, (None, ""))
            assert ename == "WrongAnswer" and "Hint: " in evalue, (i, ename, evalue)
        else:
            said = printed_by(nb.cells[i])
            assert ": right." in said and "not answered yet" not in said, (i, said)
            # nbgrader gives a graded cell that writes to stderr no points, even when it is right
            # (the course: mpiworkbench.course): a check cell must not
            assert printed_by(nb.cells[i], "stderr") == "", (i, printed_by(nb.cells[i], "stderr"))
    return nb


def printed_by(cell, stream: str = "stdout") -> str:
    """What *cell* printed to *stream* (``"stdout"`` or ``"stderr"``)."""
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("name") == stream)


def printed(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook's code cells printed to stdout."""
    return "".join(printed_by(cell) for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs_with_the_reference_solutions(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    run_notebook(path, tmp_path, "solution")


WITH_EXERCISES = [p for p in ALL if exercises.answer_cells(nbformat.read(p, as_version=4))]


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=[p.stem for p in WITH_EXERCISES])
def test_wrong_answers_fail_their_checks_with_a_hint(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    run_notebook(path, tmp_path, "wrong")
