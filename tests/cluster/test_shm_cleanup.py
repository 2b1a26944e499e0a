"""Nothing left behind by a restart: a start, three restarts and a stop leave ``/dev/shm`` as
they found it — MPICH's segment of every killed world and the interposer's files of every rank
(traced, so its trace buffer too) — for a workbench's own cluster and for an ``ipcluster`` one
a workbench attached to and restarted; files of other worlds are left alone.

Other processes on the machine may create and remove files in ``/dev/shm`` meanwhile, so the
files checked are those the test's own ranks reported mapping or holding open (each world has
its own random MPICH segment name), plus decoys standing for another world's.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import ipyparallel as ipp
import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.cluster import attach
from mpiworkbench.core import shm
from mpiworkbench.trace.hang import interposer_paths
from tests.cluster.slurm import wait_until
from tests.ipcluster import LIMIT

pytestmark = pytest.mark.cost(45)

RESTARTS = 3


def _traced_world_files(wb) -> set[str]:
    """Trace one call on every rank, then the world files each rank maps or holds open now, as
    reported by the ranks themselves, with each rank's interposer files (named by its pid)."""
    with wb.trace(capacity=1000) as t:
        wb.run(_allreduce)
    assert t.trace is not None
    files = set()
    for footprint in wb.run(shm.footprint):
        files |= set(footprint["files"]) | set(interposer_paths(footprint["pid"]))
    return files


@ipp.interactive  # sent by value: engines of a cluster started elsewhere cannot import this module
def _allreduce():
    from mpi4py import MPI

    return MPI.COMM_WORLD.allreduce(1)


def _existing(paths: set[str]) -> list[str]:
    return sorted(path for path in paths if os.path.lexists(path))


@pytest.fixture
def decoys():
    """Files of another MPI world: one nobody maps (yet: a world starting elsewhere), one a live
    process (this one) holds open. Neither may be removed. (A segment nobody maps that is older
    than ``shm.UNHELD_AFTER_S`` is left behind by whoever made it, and swept: tests/unit/test_shm.py.
    The unmapped one is dated an hour ahead, so that it stays that young however long the test
    takes: it took 69 s under CI's load, and the sweep took it.)"""
    dead, held = (Path(shm.SHM_DIR) / f"mpich_shm_test{uuid.uuid4().hex[:8]}_0" for _ in range(2))
    dead.write_bytes(b"\0" * 4096)
    young = time.time() + 3600
    os.utime(dead, (young, young))
    with open(held, "wb") as holding:
        holding.write(b"\0" * 4096)
        holding.flush()
        yield dead, held
        for path in (dead, held):
            path.unlink(missing_ok=True)


def _start_restart_stop_leaves_nothing(wb, decoys, before_restart=lambda: None) -> None:
    worlds = [_traced_world_files(wb)]
    before_restart()
    for _ in range(RESTARTS):
        wb.restart()
        assert _existing(worlds[-1]) == [], "a restart removes what the killed world left in /dev/shm"
        worlds.append(_traced_world_files(wb))
    mpich = [{p for p in files if os.path.basename(p).startswith("mpich_shm_")} for files in worlds]
    assert all(mpich) and len(set.union(*mpich)) == RESTARTS + 1, f"each world maps a segment of its own: {mpich}"
    assert len(_existing(worlds[-1])) >= 1 + 3 * wb.n, "the live world's segment, slots, stacks and trace buffers"
    wb.stop(cluster=True)
    reported = set.union(*worlds)
    assert _existing(reported) == [], "a stop leaves nothing of any world in /dev/shm"
    assert all(path.exists() for path in decoys), "another world's files are left alone"


def test_own_cluster_start_three_restarts_and_stop_leave_dev_shm_as_found(fresh_wb, decoys):
    _start_restart_stop_leaves_nothing(fresh_wb, decoys)


def test_a_stop_removes_what_a_dead_world_left(fresh_wb, decoys):
    """A rank killed from outside: the world dies with nobody left to unlink its files."""
    wb = fresh_wb
    files = set()
    for footprint in wb.client[:].apply_sync(shm.footprint):  # before any wb.run: nothing armed
        files |= set(footprint["files"]) | set(interposer_paths(footprint["pid"]))
    assert any(os.path.basename(p).startswith("mpich_shm_") for p in files)
    victim = next(engine for engine, rank in wb.ranks.items() if rank == 1)
    wb.client.send_signal("SIGKILL", targets=[victim], block=True)
    wait_until(lambda: wb.state == "dead", "the workbench to see the dead world", LIMIT)
    wb.stop()
    assert _existing(files) == [], "the dead world's files are removed by the stop"
    assert all(path.exists() for path in decoys)


def test_attached_ipcluster_start_three_restarts_and_stop_leave_dev_shm_as_found(ipcluster_mpi, decoys):
    wb = Workbench.attach(profile="mpi", activate=False)
    try:
        def after_early_shutdown():
            # ipcluster tears its cluster down when its engines stop within its first 30 s
            # (IPClusterStart.early_shutdown): restart after that, as a user would
            wait_until(lambda: "Engines appear to have started successfully"
                       in ipcluster_mpi.log.read_text(errors="replace"),
                       "ipcluster to consider its engines started", LIMIT)

        _start_restart_stop_leaves_nothing(wb, decoys, before_restart=after_early_shutdown)
        wait_until(lambda: attach.running_cluster("mpi") is None, "the cluster to stop", LIMIT)
    finally:
        wb.stop()
