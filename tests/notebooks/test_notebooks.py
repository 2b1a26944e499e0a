"""Every notebook in notebooks/ is executed: a notebook that does not run is a failing test.

Notebooks read ``MPIWORKBENCH_SMALL=1`` to use small sizes. Cells tagged
``raises-exception`` may raise (they show an error on purpose); any other error fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.process_tree import leftover_cluster_processes

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))
#: Seconds one cell may take before the notebook counts as broken.
CELL_TIMEOUT_S = int(os.environ.get("MPIWORKBENCH_CELL_TIMEOUT", "600"))


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in ALL), [p.name for p in ALL]


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        # files a notebook writes land in a scratch directory, not in the repository
        resources={"metadata": {"path": str(tmp_path)}},
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


def test_zz_notebooks_left_nothing_running():
    leftovers = leftover_cluster_processes()
    assert leftovers == [], "\n".join(leftovers)
