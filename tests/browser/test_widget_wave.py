"""The wave panel (issues 5, 12) in real Chromium: it steps, plays, pauses and redraws live."""

from __future__ import annotations

import pytest

from tests.browser.conftest import screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    click_until_number,
    control,
    error_outputs,
    image_sources,
    panel_in_notebook,
    read_number,
    wait_image_loaded,
    wait_kernel_idle,
    wait_number,
    wait_redrawn,
    wait_src_changed,
    watch_redraws,
)

pytestmark = pytest.mark.cost(80, (
                         "the wave panel stepped, played and redrawn in JupyterLab on a 2-rank world of its "
                         "own"))

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "w = wb.wave(mesh=17)\nw",
    "w.widget()",
]
PANEL_CELL = 2
STEPS = r"steps = (\d+)"
TIMING = 2  # the timing bars: the last picture a redraw sets


def test_wave_widget_steps_plays_and_redraws(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_wave", CELLS, PANEL_CELL) as panel:
        button(panel, "Step 10").wait_for(timeout=LIMIT_MS)
        assert wait_number(page, STEPS, 0, 0) == 0
        images = panel.locator("img")
        assert images.count() == 3  # slice, error history, timing bars
        for i in range(3):
            wait_image_loaded(page, images.nth(i))
        slice_image = images.nth(0)
        before = image_sources(images)

        # Every redraw sets the status, then the slice, error and timing pictures, in that
        # order: the timing picture changing after the status shows that a redraw is done.
        status = panel.locator(".widget-html-content", has_text="steps = ")
        watch_redraws(page, status, images)

        # Step 10: the status counts 10 and every image redraws
        assert click_until_number(page, button(panel, "Step 10"), STEPS, 10) == 10
        for i in range(3):
            wait_src_changed(page, images.nth(i), before[i])
        wait_redrawn(page, STEPS, 10, TIMING)
        assert wait_number(page, r"t = (\d+\.\d+)", minimum=1e-9) > 0

        # Play: the count keeps growing (each frame redraws), then pause
        play = button(panel, "Play")
        src = slice_image.get_attribute("src")
        play.click()
        page.wait_for_function("([el]) => el.classList.contains('mod-active')", arg=[play.element_handle()])
        wait_number(page, STEPS, minimum=12)
        src = wait_src_changed(page, slice_image, src)
        wait_number(page, r"([0-9.]+) frames/s", minimum=1e-9)  # Play shows its frame rate
        play.click()
        page.wait_for_function("([el]) => !el.classList.contains('mod-active')", arg=[play.element_handle()])

        # Paused: the play loop has ended once the step buttons are enabled again (they are
        # disabled while it runs); Step 1 then adds exactly one step.
        step1 = button(panel, "Step 1")
        page.wait_for_function("([el]) => !el.disabled", arg=[step1.element_handle()], timeout=LIMIT_MS)
        paused_at = int(read_number(page, STEPS))
        assert click_until_number(page, step1, STEPS, paused_at + 1) == paused_at + 1
        wait_redrawn(page, STEPS, paused_at + 1, TIMING)
        assert click_until_number(page, button(panel, "Step 10"), STEPS, paused_at + 11) == paused_at + 11
        wait_redrawn(page, STEPS, paused_at + 11, TIMING)

        # Slice axis: a slice normal to x is drawn (its axis labels differ, so the picture
        # does). The error and timing pictures need not change: they do not depend on it.
        src = slice_image.get_attribute("src")
        control(panel, "dropdown", "Slice axis").locator("select").select_option("x")
        src = wait_src_changed(page, slice_image, src)
        slider = control(panel, "slider", "Slice index")
        assert slider.locator(".widget-readout").inner_text().strip() == "8"  # 17 // 2
        # Slice index, from the keyboard: Home moves the slider to the x = 0 face
        slider.locator(".noUi-handle").first.focus()
        page.keyboard.press("Home")
        readout = slider.locator(".widget-readout").element_handle()
        page.wait_for_function("([el]) => el.textContent.trim() === '0'", arg=[readout])
        wait_src_changed(page, slice_image, src)
        wait_image_loaded(page, slice_image)
        wait_kernel_idle(page)  # the redraw ran in the kernel's message handler: all sent now

        assert "step failed" not in panel.inner_text()
        assert error_outputs(page) == []
        panel.scroll_into_view_if_needed()
        assert screenshot(page, "widget_wave.png").stat().st_size > 10_000
