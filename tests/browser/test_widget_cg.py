"""The CG panel (issue 6) in real Chromium: it iterates, runs to convergence, stops and resets live."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    error_outputs,
    image_sources,
    panel_in_notebook,
    wait_image_loaded,
    wait_kernel_idle,
    wait_number,
    wait_src_changed,
)

pytestmark = pytest.mark.cost(75, (
                         "the CG panel iterated to convergence, stopped and reset in JupyterLab on a 2-rank "
                         "world of its own"))

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "c = wb.cg(mesh=33)\nc",
    "c.widget()",
]
PANEL_CELL = 2
ITERATIONS = r"k = (\d+)"
RHO_RATIO = r"ρk/ρ0 = ([-+0-9.e]+)"
TOL = 1e-8  # CGSolver's default

#: Arms a one-shot observer that clicks Stop the moment the kernel enables it (the run has
#: started), so Stop lands while the first chunk or its redraw is still going.
_CLICK_STOP_WHEN_ENABLED = """([stop]) => {
    const observer = new MutationObserver(() => {
        if (!stop.disabled) { observer.disconnect(); stop.click(); }
    });
    observer.observe(stop, {attributes: true, attributeFilter: ['disabled']});
}"""

_RUN_ENDED = """([run, stop]) => !run.disabled && stop.disabled"""


def _status_word(panel) -> str:
    text = panel.locator(".widget-html-content").first.inner_text()
    return text.split("status", 1)[1].split()[0]


def test_cg_widget_iterates_converges_stops_and_resets(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_cg", CELLS, PANEL_CELL) as panel:
        run, stop = button(panel, "Run to convergence"), button(panel, "Stop")
        run.wait_for(timeout=LIMIT_MS)
        assert wait_number(page, ITERATIONS, 0, 0) == 0
        assert _status_word(panel) == "running"
        assert stop.is_disabled() and not run.is_disabled()
        images = panel.locator("img")
        assert images.count() == 3  # residual history, time per rank, solution and error
        for i in range(3):
            wait_image_loaded(page, images.nth(i))
        residual_image = images.nth(0)

        # Iterate 10: the count, the residual history and the pictures follow
        before = image_sources(images)
        button(panel, "Iterate 10").click()
        assert wait_number(page, ITERATIONS, 10, 10) == 10
        for i in range(3):
            wait_src_changed(page, images.nth(i), before[i])
        assert _status_word(panel) == "running"

        # Run to convergence: it converges (ρk/ρ0 ≤ tol), then every button is usable again
        src = residual_image.get_attribute("src")
        run.click()
        panel.locator(".widget-html-content b", has_text="converged").wait_for(timeout=LIMIT_MS)
        page.wait_for_function(_RUN_ENDED, arg=[run.element_handle(), stop.element_handle()], timeout=LIMIT_MS)
        converged_at = int(wait_number(page, ITERATIONS, minimum=11))
        assert wait_number(page, RHO_RATIO) <= TOL
        wait_src_changed(page, residual_image, src)
        wait_kernel_idle(page)

        # Reset: back to x0, k = 0
        src = residual_image.get_attribute("src")
        button(panel, "Reset").click()
        assert wait_number(page, ITERATIONS, 0, 0) == 0
        wait_src_changed(page, residual_image, src)
        wait_kernel_idle(page)  # Reset's redraw runs in the kernel's message handler
        assert _status_word(panel) == "running"

        # Stop: clicked as soon as a run has started, the run ends early, not converged
        page.evaluate(_CLICK_STOP_WHEN_ENABLED, [stop.element_handle()])
        run.click()
        page.wait_for_function(_RUN_ENDED, arg=[run.element_handle(), stop.element_handle()], timeout=LIMIT_MS)
        wait_kernel_idle(page)  # Stop's handler waits for the run (and its last redraw) to end
        stopped_at = int(wait_number(page, ITERATIONS))
        assert _status_word(panel) == "running"
        assert 0 <= stopped_at < converged_at
        print(f"Stop ended the run at k = {stopped_at}; it converges at k = {converged_at}")

        # ... and running on from there converges at the same iteration as before
        run.click()
        panel.locator(".widget-html-content b", has_text="converged").wait_for(timeout=LIMIT_MS)
        page.wait_for_function(_RUN_ENDED, arg=[run.element_handle(), stop.element_handle()], timeout=LIMIT_MS)
        assert wait_number(page, ITERATIONS) == converged_at
        wait_kernel_idle(page)

        assert "run failed" not in panel.inner_text()
        assert error_outputs(page) == []
        panel.scroll_into_view_if_needed()
        assert screenshot(page, "widget_cg.png").stat().st_size > 10_000
