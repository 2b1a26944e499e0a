"""The micro-benchmark panel's Run and Stop buttons (issue 12) in real Chromium: Run works in
the background (the plot grows, Stop is live), Stop ends the sweep after the size in progress
and keeps the sizes done."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    error_outputs,
    panel_in_notebook,
    wait_image_loaded,
    wait_kernel_idle,
)

pytestmark = pytest.mark.cost(80, (
                         "the bench panel's sweep run in the background in JupyterLab, on a 2-rank world of "
                         "its own, then stopped by a click"))

SIZES = 18  # "8:1M" in powers of two
CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "p = wb.bench('pingpong', backends=('c',), sizes='8:1M')\np.cap.value = 0.2\np.widget",
]
PANEL_CELL = 1

_RUN_ENDED = """([run, stop]) => !run.disabled && stop.disabled"""


def test_bench_panel_runs_in_the_background_and_stops(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_bench", CELLS, PANEL_CELL) as panel:
        run, stop = button(panel, "Run"), button(panel, "Stop")
        run.wait_for(timeout=LIMIT_MS)
        assert stop.is_disabled() and not run.is_disabled()

        run.click()
        # the kernel is free while the sweep runs: Stop becomes enabled, and the plot appears
        # once the first size is done (the panel redraws after every size)
        page.wait_for_function("([stop]) => !stop.disabled", arg=[stop.element_handle()], timeout=LIMIT_MS)
        image = panel.locator("img")
        image.wait_for(timeout=LIMIT_MS)
        wait_image_loaded(page, image)

        stop.click()
        page.wait_for_function(_RUN_ENDED, arg=[run.element_handle(), stop.element_handle()], timeout=LIMIT_MS)
        status = panel.locator(".widget-html-content", has_text="rows, thread level")
        status.wait_for(timeout=LIMIT_MS)
        rows = int(re.search(r"(\d+) rows", status.inner_text()).group(1))
        assert 1 <= rows < SIZES  # stopped after the size in progress, the sizes done kept
        wait_kernel_idle(page)
        assert "error" not in status.inner_text()
        assert error_outputs(page) == []
        panel.scroll_into_view_if_needed()
        assert screenshot(page, "widget_bench.png").stat().st_size > 10_000
