"""A cluster started once — by ``ipcluster`` from our ``mpi`` profile (what JupyterLab's
*IPython Parallel* sidebar runs) — and a workbench that attaches to it: the rank map, the
solvers, restart through the cluster's own launchers, detach, and stopping it explicitly.
A workbench also says when its MPI world has died and gets a fresh one with ``restart()``.
"""

from __future__ import annotations

import html
import time

import ipyparallel as ipp
import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.cluster import attach
from mpiworkbench.client.errors import WorldDied
from mpiworkbench.core.machine import THREAD_LEVELS
from tests.cluster.slurm import wait_until
from tests.cluster.test_ipcluster_profile import drive_solvers
from tests.ipcluster import LIMIT

pytestmark = pytest.mark.cost(50)


@ipp.interactive  # sent by value: the engines cannot import this module
def _rank():
    from mpi4py import MPI

    return MPI.COMM_WORLD.rank


def test_attach_drives_a_cluster_ipcluster_started(ipcluster_mpi):
    t0 = time.perf_counter()
    wb = Workbench.attach(profile="mpi", activate=False)
    attached_s = time.perf_counter() - t0
    try:
        assert wb.state == "running" and not wb.owns_cluster
        assert wb.n == 2 and sorted(wb.ranks.values()) == [0, 1]
        assert wb.run(_rank) == [0, 1], "the view is in rank order"
        assert wb.launcher == "mpi"
        assert wb.thread_level in THREAD_LEVELS, "read from the engines, not assumed"
        assert attached_s < 30, f"attaching took {attached_s:.1f} s"  # a hang guard, not a benchmark

        drive_solvers(wb, steps=4)

        # ipcluster tears its whole cluster down when its engines stop within its first 30 s
        # (IPClusterStart.early_shutdown: "they probably failed to connect"); a restart from an
        # attached session must come after that, as it would for a user
        wait_until(lambda: "Engines appear to have started successfully" in ipcluster_mpi.log.read_text(errors="replace"),
                   "ipcluster to consider its engines started", LIMIT)
        wb.restart()  # through the cluster's own launcher, from this process
        assert wb.state == "running" and wb.run(_rank) == [0, 1]
        said = wb.stop()
        assert "detached" in said and "keeps running" in said
        assert wb.state == "stopped"
        assert attach.running_cluster("mpi") is not None, "detaching leaves the cluster running"

        again = Workbench(n=2, profile="mpi", activate=False).start()  # start() attaches when one runs
        assert not again.owns_cluster and again.run(_rank) == [0, 1]
        again.stop(cluster=True)  # explicit: stop the cluster itself
        wait_until(lambda: attach.running_cluster("mpi") is None, "the cluster to stop", LIMIT)
        wait_until(lambda: ipcluster_mpi.server.poll() is not None, "ipcluster to exit", LIMIT)
    finally:
        wb.stop()


def test_control_panel_picks_the_profile_attaches_detaches_and_starts_its_own(ipcluster_mpi):
    from mpiworkbench.widgets.control import ControlPanel

    wb = Workbench(n=2, activate=False)
    try:
        panel = ControlPanel(wb)
        assert "mpi" in panel.profile.options
        panel.profile.value = "mpi"
        assert "running, 2 engine(s), launcher mpi" in panel.profile_info.value
        panel.attach_button.click()
        assert panel.message.value == "", panel.message.value
        assert wb.state == "running" and not wb.owns_cluster
        assert panel.stop_button.description == "Detach" and panel.start_button.disabled
        assert html.escape("attached (profile 'mpi')") in panel.status.value
        panel.stop_button.click()
        assert wb.state == "stopped" and attach.running_cluster("mpi") is not None, "detached, still running"

        panel.ranks.value, panel.level.value = 1, "single"  # now one rank of its own, at thread level single
        panel.start_button.click()
        assert panel.message.value == "", panel.message.value
        assert wb.owns_cluster and wb.n == 1 and wb.run(_rank) == [0]
        assert wb.info()[0]["thread_level"] == "single"
        assert panel.stop_button.description == "Stop"
        panel.stop_button.click()
        assert wb.state == "stopped"
    finally:
        wb.stop()


def test_attach_without_a_running_cluster_says_how_to_start_one(tmp_path, monkeypatch):
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"no cluster of profile 'mpi'.*ipcluster start"):
        Workbench.attach(profile="mpi")
    assert attach.running_cluster("mpi") is None


@pytest.mark.parametrize("fresh_wb", [2], indirect=True)
def test_a_dead_world_is_reported_and_restart_recovers(fresh_wb):
    wb = fresh_wb
    victim = next(engine for engine, rank in wb.ranks.items() if rank == 1)
    wb.client.send_signal("SIGKILL", targets=[victim], block=True)  # rank 1 dies: the world ends
    wait_until(lambda: wb.state == "dead", "the workbench to see the dead world", LIMIT)
    with pytest.raises(WorldDied, match=r"MPI world has died: a rank was killed \(SIGKILL.*wb\.restart\(\)") as said:
        wb.run(_rank)  # how it died, once, with no engine log in it
    assert "IPEngine" not in str(said.value) and "wb.world_log()" in str(said.value)
    assert "BAD TERMINATION" in wb.world_log()  # mpiexec's own words, one call away
    wb.restart()
    assert wb.state == "running" and wb.run(_rank) == [0, 1]


def test_unknown_benchmark_names_the_value_and_the_choices(wb):
    with pytest.raises(ValueError, match=r"'bogus'.*pingpong"):
        wb.bench("bogus")
