"""The heat panel (issue 12) in real Chromium: it steps, plays to the steady state or pauses,
shows its frame rate, and resets."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    click_until_number,
    error_outputs,
    image_sources,
    panel_in_notebook,
    read_number,
    wait_image_loaded,
    wait_kernel_idle,
    wait_number,
    wait_src_changed,
)

pytestmark = pytest.mark.cost(30)

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    # a coarse tolerance: Play reaches the steady state in some 600 steps
    "h = wb.heat(shape=(24, 32), exchange='nonblocking', tol=1e-4)\nh",
    "h.widget()",
]
PANEL_CELL = 2
STEPS = r"steps = (\d+)"
FRAMES = r"frames (\d+)"


def test_heat_widget_steps_plays_to_the_steady_state_and_resets(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_heat", CELLS, PANEL_CELL) as panel:
        button(panel, "Step 100").wait_for(timeout=LIMIT_MS)
        assert wait_number(page, STEPS, 0, 0) == 0
        images = panel.locator("img")
        assert images.count() == 3  # field with the ranks' strips, convergence history, time per rank
        for i in range(3):
            wait_image_loaded(page, images.nth(i))
        assert "rank(s)" in panel.inner_text() and "diffusing" in panel.inner_text()

        # Step 100: the count follows and every picture redraws
        before = image_sources(images)
        assert click_until_number(page, button(panel, "Step 100"), STEPS, 100) == 100
        for i in range(3):
            wait_src_changed(page, images.nth(i), before[i])
        assert wait_number(page, FRAMES, minimum=1) >= 1

        # Play runs frames until the largest change drops below tol, then stops by itself
        play = button(panel, "Play")
        play.click()
        panel.locator(".widget-html-content b", has_text="steady state reached").wait_for(timeout=LIMIT_MS)
        page.wait_for_function("([el]) => !el.classList.contains('mod-active')", arg=[play.element_handle()],
                               timeout=LIMIT_MS)
        assert wait_number(page, STEPS, minimum=101) > 100
        assert wait_number(page, r"([0-9.]+) frames/s", minimum=1e-9) > 0
        assert wait_number(page, r"largest change = ([-+0-9.e]+)") < 1e-4

        # Reset: a fresh solver at step 0
        reset = button(panel, "Reset")
        page.wait_for_function("([el]) => !el.disabled", arg=[reset.element_handle()], timeout=LIMIT_MS)
        src = images.nth(0).get_attribute("src")
        assert click_until_number(page, reset, STEPS, 0) == 0
        wait_src_changed(page, images.nth(0), src)
        assert read_number(page, STEPS) == 0
        wait_kernel_idle(page)

        assert "step failed" not in panel.inner_text()
        assert error_outputs(page) == []
        panel.scroll_into_view_if_needed()
        assert screenshot(page, "widget_heat.png").stat().st_size > 10_000
