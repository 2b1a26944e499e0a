"""Every notebook in notebooks/ is executed: a notebook that does not run is a failing test.

Here each starts its own two-rank cluster (no ``mpi`` cluster runs in the test's IPython
directory); ``test_notebooks_multinode.py`` runs them all again attached to three ranks a user
started with ``ipcluster`` on two simulated nodes. Both use :func:`run_notebook`, one kernel and
one world per notebook.

Notebooks read ``MPIWORKBENCH_SMALL=1`` to use small sizes. Cells tagged
``raises-exception`` may raise (they show an error on purpose); any other error fails.

Exercises (:mod:`mpiworkbench.exercises`) are checked in the same run, on the same kernel and
world: the notebook runs as it is handed out (every check says "not answered yet"), and right
after each exercise's check its cells (from the answer cell to the check) run again with the
deliberately wrong answer (every check fails with its hint) and then with the reference
solution (every check says right, nothing on stderr); the rest of the notebook runs on after
that. The notebook as handed out, with its outputs, is what the documentation site shows: this
tier stores it for the site (``docs/build.py``), which then executes nothing again.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

from mpiworkbench import exercises
from tests.docs_build import docs_build

pytestmark = pytest.mark.cost(520, (
                         "every notebook of the teaching path (16) executed on a 2-rank world of its own, each "
                         "exercise run again with its wrong answer and its solution; one module, so the "
                         "notebook tier's longest: declared whole, it is started first"))

#: The notebooks of the teaching path, as the site lists them.
ALL = docs_build.handed_out()
#: The digest of the sources these notebooks run, taken once before any of them runs: what the
#: site's copies are stamped with.
SOURCES_DIGEST = docs_build.sources_digest()
#: Seconds one cell may take before the notebook counts as broken.
CELL_TIMEOUT_S = int(os.environ.get("MPIWORKBENCH_CELL_TIMEOUT", "600"))
#: The answers each exercise is run again with, in this order, right after its check ran on the
#: blank; the notebook then goes on with the last one in place.
REPLAYS = ("wrong", "solution")
#: The environment a notebook's kernel (and so its world's ranks) gets besides ``MPIWORKBENCH_SMALL=1``.
#: Notebook 11 runs py-pde's and PyMPDATA's code interpreted, as its first cell suggests for a class:
#: compiled, numba spent 5-11 minutes of this suite's two cores on third-party kernels (about 130 s
#: of CPU per rank, alone). Their decomposition, halo exchanges and results against the serial solve
#: are checked the same; numba-mpi compiled under MPI is the MPI tier's (the numba-mpi backend) and
#: the site-MPI notebooks' (the README's numba wave cell).
NOTEBOOK_ENV = {"11_your_own_mpi_code": {"NUMBA_DISABLE_JIT": "1"}}


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in ALL), [p.name for p in ALL]


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def exercise_spans(nb) -> dict[int, tuple[int, str]]:
    """``{index of the check cell that closes an exercise: (index of its answer cell, NAME)}``:
    the last cell tagged ``check`` before the next answer cell (or the end)."""
    answers = exercises.answer_cells(nb)
    spans = {}
    for n, (start, name) in enumerate(answers):
        stop = answers[n + 1][0] if n + 1 < len(answers) else len(nb.cells)
        checks = [i for i in range(start + 1, stop) if exercises.CHECK_TAG in _tags(nb.cells[i])]
        assert checks, f"exercise {name} (answer cell {start}) has no cell tagged {exercises.CHECK_TAG!r} after it"
        spans[checks[-1]] = (start, name)
    return spans


def replay_cells(answered, start: int, stop: int, kind: str) -> list:
    """Copies of the code cells *start* … *stop* of *answered* (the notebook with *kind*'s
    answers in place, :func:`mpiworkbench.exercises.inject`), without outputs; for the wrong
    answer, its check cells are allowed to raise (the run goes on, to see each fail)."""
    cells = [copy.deepcopy(cell) for cell in answered.cells[start:stop + 1] if cell.cell_type == "code"]
    for cell in cells:
        cell.outputs = []
        if kind == "wrong" and exercises.CHECK_TAG in _tags(cell):
            cell.metadata["tags"] = [*_tags(cell), "raises-exception"]
    return cells


def errors_of(cells) -> dict[int, tuple[str, str]]:
    """``{position: (ename, evalue)}`` of the cells in *cells* that raised."""
    return {i: (out.get("ename"), out.get("evalue"))
            for i, cell in enumerate(cells) if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("output_type") == "error"}


def _assert_checks_say(cells, kind: str, where: str) -> None:
    """Every check cell among *cells* (run with *kind*: ``blank``, ``wrong`` or ``solution``)
    says what that answer must make it say, and nothing else raised."""
    errors = errors_of(cells)
    for i, cell in enumerate(cells):
        if exercises.CHECK_TAG not in _tags(cell):
            continue
        said = printed_by(cell)
        if kind == "wrong":
            ename, evalue = errors.pop(i, (None, ""))
            assert ename == "WrongAnswer" and "Hint: " in evalue, (where, ename, evalue, said)
        elif kind == "solution":
            assert ": right." in said and "not answered yet" not in said, (where, said)
            # nbgrader gives a graded cell that writes to stderr no points, even when it is right
            # (the course: mpiworkbench.course): a check cell must not
            assert printed_by(cell, "stderr") == "", (where, printed_by(cell, "stderr"))
        else:
            assert "not answered yet" in said and ": right." not in said, (where, said)
    allowed = {i for i, cell in enumerate(cells) if "raises-exception" in _tags(cell)} if kind == "blank" else set()
    assert {i: e for i, e in errors.items() if i not in allowed} == {}, where


def run_notebook(path: Path, scratch: Path) -> nbformat.NotebookNode:
    """Execute *path* in a fresh kernel (files it writes land in *scratch*) as it is handed out,
    each exercise run again with its wrong answer and its reference solution right after its
    check (see the module's docstring); the executed notebook as handed out.

    Fails on any error output outside cells tagged ``raises-exception``, a check on the blank
    that does not say "not answered yet", a wrong answer whose check does not fail with a
    :class:`~mpiworkbench.exercises.WrongAnswer` giving its hint, or a solution whose check
    does not say right (or writes to stderr).
    """
    nb = nbformat.read(path, as_version=4)
    handed_out = len(nb.cells)
    spans = exercise_spans(nb)
    # the notebook with each kind of answer in place (a missing one is a KeyError naming it)
    answered = {kind: exercises.inject(copy.deepcopy(nb), path.stem, kind) for kind in REPLAYS} if spans else {}
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        # files a notebook writes land in a scratch directory, not in the repository
        resources={"metadata": {"path": str(scratch)}},
    )

    async def execute():
        async with client.async_setup_kernel():
            info = await client.async_wait_for_reply(client.kc.kernel_info())
            nb.metadata["language_info"] = info["content"]["language_info"]
            for index in range(handed_out):
                await client.async_execute_cell(nb.cells[index], index, execution_count=client.code_cells_executed + 1)
                if index not in spans:
                    continue
                start, name = spans[index]
                for kind in REPLAYS:
                    cells = replay_cells(answered[kind], start, index, kind)
                    nb.cells.extend(cells)  # executed at indices of their own, then taken out again
                    try:
                        for offset, cell in enumerate(cells):
                            await client.async_execute_cell(cell, handed_out + offset,
                                                            execution_count=client.code_cells_executed + 1)
                    finally:
                        del nb.cells[handed_out:]
                    _assert_checks_say(cells, kind, f"{path.stem}: exercise {name} with the {kind} answer")
            client.set_widgets_metadata()

    run_sync(execute)()
    _assert_checks_say(nb.cells, "blank", f"{path.stem} as handed out")
    return nb


def printed_by(cell, stream: str = "stdout") -> str:
    """What *cell* printed to *stream* (``"stdout"`` or ``"stderr"``)."""
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("name") == stream)


def printed(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook's code cells printed to stdout."""
    return "".join(printed_by(cell) for cell in nb.cells if cell.cell_type == "code")


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs_and_its_exercises_check_blank_wrong_and_right(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    env = NOTEBOOK_ENV.get(path.stem, {})
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    nb = run_notebook(path, tmp_path)
    if "NUMBA_DISABLE_JIT" in env:  # the ranks ran as asked, and said so
        assert "interpreted (NUMBA_DISABLE_JIT=1)" in printed(nb), printed(nb)[-2000:]
    # one owner per file the runtime makes: ipyparallel's "Failed to remove …ipengine-….log" (two
    # threads removing a launcher's output file when a world ended) is never printed
    stray = {i: printed_by(cell, "stderr") for i, cell in enumerate(nb.cells)
             if cell.cell_type == "code" and "Failed to remove" in printed_by(cell, "stderr")}
    assert not stray, stray
    # what the documentation site shows (docs/build.py renders it instead of executing again)
    docs_build.store_executed(nb, path.name, SOURCES_DIGEST)


def test_every_notebook_is_stored_for_the_site():
    """Runs after the notebooks (pytest keeps a file's order): each one's run is stored, stamped
    with the sources it ran, where the site's build takes it from (``docs/build.py --stored``)."""
    stored, problems = docs_build.stored_notebooks(SOURCES_DIGEST)
    assert problems == [], problems
    assert sorted(stored) == sorted(p.name for p in ALL)
