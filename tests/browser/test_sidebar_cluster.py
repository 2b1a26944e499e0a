"""The users' path in Chromium: START the ``mpi`` profile in JupyterLab's *IPython Parallel*
sidebar, then run ``00_start_here`` cell by cell — its first cell attaches to that cluster,
and its ``wb.restart()`` (after a rank failed before a barrier) has the server restart it.

The sidebar's cluster belongs to the JupyterLab server; the notebook only detaches from it
(``wb.stop()``), and the test stops it with the request the sidebar's STOP sends.
"""

from __future__ import annotations

import json
import os
import time
import urllib.parse
import urllib.request

import pytest

from mpiworkbench.client.cluster.profiles import create_profile
from tests.browser.conftest import open_notebook, run_cells, screenshot, shutdown_kernels, wait_idle
from tests.browser.test_start_here import CELLS_THROUGH_PLOT

pytestmark = pytest.mark.cost(40)

KEY = "mpi:"  # the sidebar's key of profile mpi, cluster id ""
#: Cells run after the plot until the restarted world answers (the failing-rank section)
MAX_CELLS_TO_RESTART = 12


def _clusters(server) -> dict[str, dict]:
    with urllib.request.urlopen(f"{server.url}/ipyparallel/clusters?token={server.token}", timeout=30) as r:
        return {c["id"]: c for c in json.load(r)}


def _wait(condition, what: str, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.2)  # polling a condition, not a fixed wait


def _controller_pid(server) -> int | None:
    model = _clusters(server).get(KEY) or {}
    return ((model.get("controller") or {}).get("state") or {}).get("pid")


def _running_engines(server) -> int:
    model = _clusters(server).get(KEY) or {}
    if not model.get("controller"):
        return 0
    return int((model.get("engines") or {}).get("n") or 0)


def test_start_in_the_sidebar_then_the_notebook_attaches(page, lab_server):
    # `make lab` writes the mpi profile; here, into this run's private IPython directory
    create_profile("mpi", launcher="mpi", ipython_dir_=os.environ["IPYTHONDIR"])
    page.goto(f"{lab_server.url}/lab?token={lab_server.token}")
    page.locator(".jp-SideBar [role=tab][data-id=ipp-cluster-launcher]").click()
    card = page.locator(f"li.ipp-ClusterListingItem[data-cluster-id='{KEY}']")
    try:
        card.wait_for(timeout=120_000)
        card.locator("button.ipp-ClusterListingItem-start").click()
        _wait(lambda: _running_engines(lab_server) == 2, "the sidebar's mpi cluster to run 2 engines")
        card.locator("button.ipp-ClusterListingItem-stop").wait_for(state="visible", timeout=60_000)

        open_notebook(page, lab_server, "00_start_here.ipynb")
        run_cells(page, CELLS_THROUGH_PLOT)
        outputs = page.locator(".jp-NotebookPanel .jp-OutputArea-output")
        outputs.filter(has_text="attached to the running 'mpi' cluster: 2 MPI rank(s)").first.wait_for(timeout=120_000)
        for rank in (0, 1):
            outputs.filter(has_text=f"Hello, world! I'm process {rank} of 2.").first.wait_for(timeout=300_000)
        wait_idle(page)
        panel = page.locator(".mpiwb-control-panel")
        assert "attached (profile 'mpi')" in panel.inner_text()
        assert panel.locator(".mpiwb-state").inner_text() == "running"
        screenshot(page, "00_start_here-attached.png")

        # on through the failing rank and `wb.restart()`: the server that owns the cluster
        # restarts it (a new controller), so the sidebar's STOP below still stops everything
        controller_before = _controller_pid(lab_server)
        for _ in range(MAX_CELLS_TO_RESTART):
            run_cells(page, 1)
            if outputs.filter(has_text="back again: 1").count():
                break
        outputs.filter(has_text="back again: 0").first.wait_for(timeout=120_000)
        wait_idle(page)
        assert _running_engines(lab_server) == 2
        assert _controller_pid(lab_server) not in (None, controller_before)
        screenshot(page, "00_start_here-restarted.png")
    except Exception:
        screenshot(page, "sidebar-failure.png")
        raise
    finally:
        shutdown_kernels(lab_server)  # the kernel only detaches: the cluster stays up …
        assert _running_engines(lab_server) in (0, 2)
        if _clusters(lab_server).get(KEY, {}).get("controller"):
            # … until its owner stops it: what the sidebar's STOP sends
            request = urllib.request.Request(
                f"{lab_server.url}/ipyparallel/clusters/{urllib.parse.quote(KEY)}?token={lab_server.token}",
                method="DELETE")
            urllib.request.urlopen(request, timeout=120).close()
        _wait(lambda: not _clusters(lab_server).get(KEY, {}).get("controller"), "the sidebar's cluster to stop")
    # no process of this run's clusters is left: checked once the page is closed, by
    # test_start_here.py::test_kernel_shutdown_leaves_no_cluster
