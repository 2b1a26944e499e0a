"""Every frame a live panel draws reaches the browser (issue 12): during a few seconds of
Play, the slice picture Chromium receives changes exactly as often as the panel's own
counters say — one new picture per frame, except frames whose picture came out byte for
byte the same as the one before (such a frame sends nothing, and the panel counts it apart).
How many frames repeat their picture depends on the load: the steps per frame adapt to the
frame rate, and when a frame's steps come near a whole period of the standing wave the
picture hardly moves from frame to frame (a CI run once saw 13 new pictures in 27 frames).
So the test asks for no share of new pictures: Play runs until both a number of frames and a
number of new pictures have been drawn. No timing threshold."""

from __future__ import annotations

import pytest

from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    error_outputs,
    panel_in_notebook,
    read_number,
    wait_image_loaded,
    wait_kernel_idle,
    wait_number,
)

pytestmark = pytest.mark.cost(45)

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "w = wb.wave(mesh=17)",
    "w.widget()",
]
PANEL_CELL = 2
FRAMES = r"frames (\d+)"
PICTURES = r"\((\d+) new pictures\)"
PLAYED = 25  # frames to see before pausing
NEW = 10  # new pictures to see before pausing

_COUNT_UPDATES = """([img]) => {
    window.__sliceUpdates = 0;
    // one record per change of src (the observer may hand over several at once)
    new MutationObserver((records) => { window.__sliceUpdates += records.length; })
        .observe(img, {attributes: true, attributeFilter: ['src']});
}"""


def test_the_browser_receives_every_frame_the_panel_counts(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_frames", CELLS, PANEL_CELL) as panel:
        play, step1 = button(panel, "Play"), button(panel, "Step 1")
        play.wait_for(timeout=LIMIT_MS)
        slice_image = panel.locator("img").nth(0)
        wait_image_loaded(page, slice_image)
        wait_kernel_idle(page)
        first, first_pictures = read_number(page, FRAMES), read_number(page, PICTURES)
        assert first == first_pictures == 0  # building the panel draws, but it is no frame of the solver
        page.evaluate(_COUNT_UPDATES, [slice_image.element_handle()])

        play.click()
        wait_number(page, FRAMES, minimum=first + PLAYED)
        wait_number(page, PICTURES, minimum=first_pictures + NEW)
        play.click()
        # the play loop has ended once the step buttons are enabled again
        page.wait_for_function("([el]) => !el.disabled", arg=[step1.element_handle()], timeout=LIMIT_MS)
        wait_kernel_idle(page)
        counted = read_number(page, FRAMES) - first
        new = read_number(page, PICTURES) - first_pictures
        received = page.evaluate("() => window.__sliceUpdates")
        assert counted >= PLAYED and NEW <= new <= counted
        assert received == new, (f"the panel drew {counted} frames with {new} new pictures, "
                                 f"the browser got {received} pictures")
        assert error_outputs(page) == []
