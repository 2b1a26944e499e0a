"""Two notebooks on one cluster, in Chromium: the ``mpi`` cluster started as the sidebar's START
does, a wave panel playing in one notebook and ``%%px`` collective cells run in the other at
the same time. Both finish with the right results: the world's turn orders the two notebooks'
MPI work (``mpiworkbench.client.calls.turns``), and each ``wb.clients()`` lists both.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
import urllib.request

import pytest

from mpiworkbench.client.cluster.profiles import create_profile
from tests.browser.conftest import run_cells, screenshot, shutdown_kernels, wait_idle, write_notebook
from tests.browser.test_sidebar_cluster import KEY, _clusters, _running_engines, _wait
from tests.browser.widgets_support import (
    LIMIT_MS,
    OUTPUTS,
    button,
    cell_output,
    error_outputs,
    open_fresh,
    wait_no_cluster_left,
    wait_number,
)

pytestmark = pytest.mark.cost(45)

N = 2
ROUNDS = 25
ATTACH = "from mpiworkbench import Workbench\nwb = Workbench.attach(profile='mpi')"
PLAYER = [ATTACH, "w = wb.wave(mesh=17)\nw.widget()"]
COLLECTIVE = (
    "%%px\n"
    "from mpi4py import MPI\n"
    "comm = MPI.COMM_WORLD\n"
    "total = 0\n"
    f"for i in range({ROUNDS}):\n"
    "    total += comm.allreduce(comm.rank + i)\n"
    "    total += comm.bcast(i if comm.rank == 0 else None, root=0)\n"
    "print('collectives done:', total)"
)
CELLS = [ATTACH, COLLECTIVE, COLLECTIVE, COLLECTIVE, "print('attached:', sorted(c['notebook'] for c in wb.clients()))"]
STEPS = r"steps = (\d+)"


def _expected_total(n: int) -> int:
    """What every rank prints: per round the allreduce of rank + i, plus the broadcast i."""
    return sum(sum(rank + i for rank in range(n)) + i for i in range(ROUNDS))


def _start_sidebar_cluster(server) -> None:
    """What the sidebar's START sends for profile mpi (the listing creates its entry)."""
    assert KEY in _clusters(server), "the mpi profile's cluster is listed"
    request = urllib.request.Request(
        f"{server.url}/ipyparallel/clusters/{urllib.parse.quote(KEY)}?token={server.token}",
        data=json.dumps({"n": N}).encode(), method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=300).close()
    _wait(lambda: _running_engines(server) == N, f"the sidebar's mpi cluster to run {N} engines")


def _stop_sidebar_cluster(server) -> None:
    if _clusters(server).get(KEY, {}).get("controller"):
        request = urllib.request.Request(
            f"{server.url}/ipyparallel/clusters/{urllib.parse.quote(KEY)}?token={server.token}", method="DELETE")
        urllib.request.urlopen(request, timeout=120).close()
    _wait(lambda: not _clusters(server).get(KEY, {}).get("controller"), "the sidebar's cluster to stop")


def test_play_in_one_notebook_and_px_collectives_in_another_both_finish(page, lab_server):
    create_profile("mpi", launcher="mpi", ipython_dir_=os.environ["IPYTHONDIR"])
    player_nb = write_notebook(lab_server, "browser_shared_play.ipynb", PLAYER)
    cells_nb = write_notebook(lab_server, "browser_shared_px.ipynb", CELLS)
    other = page.context.new_page()
    other.set_default_timeout(60_000)
    ok = False
    try:
        _start_sidebar_cluster(lab_server)

        # notebook 1: the wave panel, playing
        open_fresh(page, lab_server, player_nb, workspace="mpiwb-shared-play")
        run_cells(page, len(PLAYER))
        panel = cell_output(page, 1)
        play = button(panel, "Play")
        play.wait_for(timeout=LIMIT_MS)
        play.click()
        page.wait_for_function("([el]) => el.classList.contains('mod-active')", arg=[play.element_handle()])
        before = wait_number(page, STEPS, minimum=1)

        # notebook 2, meanwhile: three %%px cells of collectives, each waiting its turn
        open_fresh(other, lab_server, cells_nb, workspace="mpiwb-shared-px")
        run_cells(other, len(CELLS), timeout_ms=LIMIT_MS)
        wait_idle(other)
        texts = other.locator(OUTPUTS).all_inner_texts()
        # %%px --no-stream groups the ranks that printed alike: [stdout:0, 1] or [stdout:0-2]
        done = [(str(rank), total) for t in texts
                for ranks, total in re.findall(r"\[stdout:([\d, -]+)\]\s*collectives done: (\d+)", t)
                for rank in _ranks(ranks)]
        expected = str(_expected_total(N))
        assert sorted(done) == sorted((str(r), expected) for _ in range(3) for r in range(N)), texts
        attached = next(t for t in texts if t.startswith("attached:"))
        assert player_nb in attached and cells_nb in attached, attached
        assert error_outputs(other) == []

        # the panel kept playing through it, and pauses cleanly
        assert page.evaluate("([el]) => el.classList.contains('mod-active')", [play.element_handle()])
        wait_number(page, STEPS, minimum=before + 10)
        play.click()
        step1 = button(panel, "Step 1")
        page.wait_for_function("([el]) => !el.disabled", arg=[step1.element_handle()], timeout=LIMIT_MS)
        assert error_outputs(page) == []
        screenshot(other, "shared-world-px.png")
        ok = True
    except Exception:
        for pg, name in ((page, "shared-world-play-failure.png"), (other, "shared-world-px-failure.png")):
            try:
                screenshot(pg, name)
                print(name, "outputs:", pg.locator(OUTPUTS).all_inner_texts())
            except Exception:  # noqa: BLE001 - the report of a failure must not hide it
                pass
        raise
    finally:
        other.close()
        shutdown_kernels(lab_server)  # the kernels only detach: the cluster is the server's
        _stop_sidebar_cluster(lab_server)
        leftovers = wait_no_cluster_left(lab_server.process.pid)
        if ok:
            assert leftovers == [], "cluster processes outlived the sidebar's STOP:\n" + "\n".join(leftovers)


def _ranks(label: str) -> list[int]:
    """The ranks of a grouped output label: ``0, 1`` or ``0-2, 5``."""
    found = []
    for part in label.split(","):
        first, _, last = part.strip().partition("-")
        found += range(int(first), int(last or first) + 1)
    return found
