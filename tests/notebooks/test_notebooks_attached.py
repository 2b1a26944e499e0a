"""Every notebook again, attached to a cluster the user started: ``ipcluster start -n 3
--profile=mpi`` (three ranks on this two-core machine, so oversubscribed). The first cell of
each notebook finds it and attaches; every notebook must run at the rank count it finds.
Notebook 00 restarts the engines of this cluster it does not own; ``ipcluster stop`` must
still stop them (checked by ``test_zz_no_leftovers.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mpiworkbench.client.profile import create_profile
from tests.cluster.slurm import wait_until
from tests.ipcluster import LIMIT, IPCluster
from tests.notebooks.test_notebooks import ALL, printed, run_notebook

RANKS = 3


@pytest.fixture(scope="module")
def ipython_dir(tmp_path_factory):
    """An IPython directory whose ``mpi`` cluster runs 3 engines, started by ipcluster."""
    root = tmp_path_factory.mktemp("attached")
    directory = root / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=directory)
    ipcluster = IPCluster("mpi", directory, root, dict(os.environ))
    try:
        ipcluster.start(RANKS).close()
        # ipcluster tears its cluster down when its engines stop within 30 s of starting
        # (IPClusterStart.early_shutdown); notebook 00 restarts them, so wait that out
        wait_until(lambda: "Engines appear to have started successfully" in ipcluster.log.read_text(),
                   "ipcluster to consider its engines started", LIMIT)
        yield directory
    finally:
        ipcluster.stop()


@pytest.mark.parametrize("path", ALL, ids=[p.stem for p in ALL])
def test_notebook_runs_attached_to_three_ranks(path: Path, ipython_dir: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))  # the kernel's IPython directory
    nb = run_notebook(path, tmp_path)
    assert f"attached to the running 'mpi' cluster: {RANKS} MPI rank(s)" in printed(nb)
