"""The README's code runs as written: its ```python blocks (``%%px`` cells among them), in order,
become one notebook that runs as the notebook tier runs the teaching notebooks
(:func:`~tests.notebooks.test_notebooks.run_notebook`), twice — with the ``mpi`` cluster a user
started with ``ipcluster`` running (the README's first cell attaches to it) and with none (that
cell starts ranks of its own). A last cell, not the README's, prints ``wb.origin`` so that the test
sees which of the two the README's words promised happened. Shell blocks (``make lab``, the
``mpiworkbench`` commands) are not run here."""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest

from mpiworkbench.client.cluster.profiles import create_profile
from tests.ipcluster import IPCluster
from tests.notebooks.test_notebooks import printed, run_notebook

pytestmark = pytest.mark.cost(30)

README = Path(__file__).resolve().parents[2] / "README.md"
RANKS = 2
#: Run after the README's cells: which cluster its workbench is on.
ORIGIN = "print(wb.origin)"


def readme_cells(text: str) -> list[str]:
    """The README's ```python blocks, in order."""
    return [block.strip("\n") for block in re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)]


def test_the_readme_has_python_and_px_blocks():
    cells = readme_cells(README.read_text())
    assert cells and any(cell.startswith("%%px") for cell in cells), cells


def run_readme(scratch: Path) -> str:
    """The README's cells and :data:`ORIGIN` run in a fresh kernel; what they printed."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [*readme_cells(README.read_text()), ORIGIN]]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    path = scratch / "README.ipynb"
    nbformat.write(nb, path)
    return printed(run_notebook(path, scratch))


@pytest.fixture
def ipython_dir(monkeypatch, tmp_path) -> Path:
    """What ``make lab`` leaves: an ``mpi`` profile (here in an IPython directory of the test's
    own, no cluster of it running); and the notebooks' small sizes."""
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    create_profile("mpi", launcher="mpi", ipython_dir_=tmp_path / "ipython")
    return tmp_path / "ipython"


def test_readme_runs_attached_to_a_running_mpi_cluster(ipython_dir, tmp_path):
    cluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    try:
        cluster.start(RANKS).close()
        said = run_readme(tmp_path)
    finally:
        cluster.stop()
    for rank in range(RANKS):
        assert f"Hello, world! I'm process {rank} of {RANKS}." in said, said
    assert "attached to the running 'mpi' cluster" in said, said


def test_readme_runs_with_no_cluster_running(ipython_dir, tmp_path):
    said = run_readme(tmp_path)
    for rank in range(RANKS):
        assert f"Hello, world! I'm process {rank} of {RANKS}." in said, said
    assert "started a cluster of its own" in said, said
