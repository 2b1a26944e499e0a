"""A traced wave step in real Chromium: the trace view shows its timeline (the halo Sendrecvs
as bars, the messages as arrows), the zoom redraws it, and the matrix tab draws."""

from __future__ import annotations

import pytest

from tests.browser.conftest import run_cells, screenshot, write_notebook
from tests.browser.widgets_support import (
    LIMIT_MS,
    cell_output,
    error_outputs,
    kernel_session,
    open_fresh,
    wait_image_loaded,
    wait_kernel_idle,
    wait_src_changed,
)

pytestmark = pytest.mark.cost(45)

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "w = wb.wave(mesh=17, dims=(2, 1, 1))\nt = w.trace(steps=1)\n"
    "assert t.count('MPI_Sendrecv', 0) == t.count('MPI_Sendrecv', 1) == 6\n"
    "from mpiworkbench.trace.events import KIND\n"
    "halo = [m for m in t.messages() if t.events['kind'][m['send']] == KIND['MPI_Sendrecv']]\n"
    "print('halo messages:', len(halo))",
    "from mpiworkbench.widgets.trace import TraceView\nview = TraceView(t, title='one traced wave step')\nview.widget",
]
VIEW_CELL = 2


def test_traced_wave_step_timeline(page, lab_server):
    name = write_notebook(lab_server, "browser_trace_timeline.ipynb", CELLS)
    with kernel_session(page, lab_server, "trace_timeline"):
        open_fresh(page, lab_server, name)
        run_cells(page, len(CELLS))
        assert "halo messages: 2" in cell_output(page, 1).inner_text()
        view = cell_output(page, VIEW_CELL)
        view.locator(".mpiwb-trace-view").wait_for(timeout=LIMIT_MS)
        assert "MPI calls" in view.inner_text() and "messages" in view.inner_text()
        timeline = view.locator("img").first
        wait_image_loaded(page, timeline)
        width = page.evaluate("([el]) => el.naturalWidth", [timeline.element_handle()])
        assert width > 400  # a drawn figure, not a placeholder
        view.scroll_into_view_if_needed()
        assert screenshot(page, "trace_timeline.png").stat().st_size > 10_000

        # zoom from the kernel side (what dragging the slider does): the timeline redraws
        before = timeline.get_attribute("src")
        page.keyboard.press("Escape")
        cells = page.locator(".jp-NotebookPanel .jp-Cell")
        cells.last.click()
        page.keyboard.press("Escape")
        page.keyboard.press("b")  # a new cell below
        page.keyboard.press("Enter")
        page.keyboard.type("lo, hi = view.zoom.value\nview.zoom.value = (lo, lo + (hi - lo) / 2)")
        page.keyboard.press("Shift+Enter")
        wait_src_changed(page, timeline, before)
        wait_image_loaded(page, timeline)

        # the matrix tab
        view.locator(".lm-TabBar-tab", has_text="Matrix").click()
        matrix = view.locator("img").nth(1)
        wait_image_loaded(page, matrix)
        wait_kernel_idle(page)
        assert error_outputs(page) == []
