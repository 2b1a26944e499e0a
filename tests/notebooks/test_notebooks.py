"""Every notebook in notebooks/ is executed: a notebook that does not run is a failing test.

Here each starts its own two-rank cluster (no ``mpi`` cluster runs in the test's IPython
directory); ``test_notebooks_attached.py`` runs them all again on a three-rank cluster a user
started with ``ipcluster``, which their first cell attaches to.

Notebooks read ``MPIWORKBENCH_SMALL=1`` to use small sizes. Cells tagged
``raises-exception`` may raise (they show an error on purpose); any other error fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))
#: Seconds one cell may take before the notebook counts as broken.
CELL_TIMEOUT_S = int(os.environ.get("MPIWORKBENCH_CELL_TIMEOUT", "600"))


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in ALL), [p.name for p in ALL]


def run_notebook(path: Path, scratch: Path) -> nbformat.NotebookNode:
    """Execute *path* in a fresh kernel (files it writes land in *scratch*); fail on any error
    output outside cells tagged ``raises-exception``; the executed notebook."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        # files a notebook writes land in a scratch directory, not in the repository
        resources={"metadata": {"path": str(scratch)}},
    )
    client.execute()
    errors = [
        (i, out.get("ename"), out.get("evalue"))
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and "raises-exception" not in cell.metadata.get("tags", [])
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    return nb


def printed(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook's code cells printed to stdout."""
    return "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.get("outputs", []) if out.get("name") == "stdout")


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    run_notebook(path, tmp_path)
