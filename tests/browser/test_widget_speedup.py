"""The speedup panel in real Chromium: it runs the inner-product experiment on 1 and 2 ranks,
each point traced, shows progress point by point, draws the figure (with the POP factor bars) and
the tables, saves and reloads."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    control,
    error_outputs,
    panel_in_notebook,
    wait_image_loaded,
    wait_kernel_idle,
)

pytestmark = pytest.mark.cost(20)

CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2)\nwb.start()",
    "from mpiworkbench.widgets.speedup import SpeedupPanel\npanel = SpeedupPanel(wb)\npanel.widget",
]
PANEL_CELL = 1
SIZE = 16384
VARIANTS = ("c", "numpy")  # the inner experiment's default variants
POINTS = len(VARIANTS) * 2  # two variants on 1 and 2 ranks

#: Records every text the status line shows (from the nodes each update adds, so two
#: updates rendered in one task are both seen).
_RECORD_STATUS = """([status]) => {
    window.__statusSeen = [];
    new MutationObserver(records => {
        for (const r of records) {
            for (const n of r.addedNodes) window.__statusSeen.push(n.textContent);
        }
    }).observe(status, {childList: true, subtree: true, characterData: true});
}"""


def _status(panel):
    """The panel's status line (the HTML widget next to the Run button and Progress)."""
    return panel.locator(".widget-hbox").filter(has=button(panel.page, "Run")).locator(".widget-html-content")


def _fill(panel, description: str, value: str) -> None:
    box = control(panel, "text", description).locator("input")
    box.fill(value)
    box.press("Tab")  # blur: the value is synced (continuous updates sync it as typed, too)


def test_speedup_panel_runs_the_inner_product_on_1_and_2_ranks(page, lab_server):
    with panel_in_notebook(page, lab_server, "widget_speedup", CELLS, PANEL_CELL) as panel:
        run = button(panel, "Run")
        run.wait_for(timeout=LIMIT_MS)

        # choose the experiment (via another one, so choosing really refills the controls)
        experiment = control(panel, "dropdown", "Experiment").locator("select")
        experiment.select_option("wave")
        page.wait_for_function("([el]) => el.value.startsWith('numpy/')",
                               arg=[control(panel, "select-multiple", "Variants").locator("select").element_handle()])
        experiment.select_option("inner")
        variants = control(panel, "select-multiple", "Variants").locator("select")
        page.wait_for_function("([el]) => Array.from(el.selectedOptions).map(o => o.value).join() === 'c,numpy'",
                               arg=[variants.element_handle()])
        _fill(panel, "Sizes", str(SIZE))
        _fill(panel, "Ranks", "1,2")
        control(panel, "checkbox", "Trace each point").locator("input").check()
        wait_kernel_idle(page)

        status = _status(panel)
        page.evaluate(_RECORD_STATUS, [status.element_handle()])
        run.click()
        panel.locator(".widget-html-content", has_text=f"done: {POINTS} points of inner").wait_for(timeout=LIMIT_MS)
        wait_kernel_idle(page)  # Run's handler ends after the last redraw

        # progress was shown point by point, each point as it was done
        seen = page.evaluate("() => window.__statusSeen")
        steps = [int(m.group(1)) for text in seen if (m := re.match(rf"(\d+)/{POINTS}: ", text))]
        assert steps == list(range(1, POINTS + 1)), seen
        bar = control(panel, "hprogress", "Progress").locator(".progress-bar")
        assert page.evaluate("([el]) => el.style.width", [bar.element_handle()]) == "100%"

        # the figure and the table (thesis Table 2.1 style): both rank counts, both variants
        figure = panel.locator("img").first
        wait_image_loaded(page, figure)
        assert page.evaluate("([el]) => el.naturalWidth", [figure.element_handle()]) > 400
        table = panel.locator("table").first
        headers = table.locator("thead th").all_inner_texts()
        for variant in VARIANTS:
            assert f"{variant} n={SIZE}" in headers, headers
        rows = table.locator("tbody tr")
        assert rows.count() == 2
        for i, nranks in enumerate((1, 2)):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0].split()[0] == str(nranks), cells
            medians = [float(cells[1 + 3 * v].split()[0]) for v in range(len(VARIANTS))]
            assert all(m > 0 for m in medians), cells
            speedups = [cells[2 + 3 * v] for v in range(len(VARIANTS))]
            if nranks == 1:
                assert speedups == ["N/A"] * len(VARIANTS)  # the reference point
            else:
                assert all(float(s) > 0 for s in speedups), cells

        # each point was traced: the POP factors are shown under the table, one row per point
        factors = panel.locator("pre", has_text="load")
        factors.first.wait_for(timeout=LIMIT_MS)
        assert panel.locator("b", has_text="POP factors").count() == 1
        rows = [line.split() for line in factors.first.inner_text().splitlines()[1:] if line[:1] not in ("*", "!")]
        assert len(rows) == POINTS, rows  # a row per variant and rank count

        panel.scroll_into_view_if_needed()
        shot = screenshot(page, "widget_speedup.png")
        assert shot.stat().st_size > 10_000
        # `make screenshots`: the docs' picture of the panel with a traced sweep
        target = os.environ.get("MPIWORKBENCH_SCREENSHOT_DIR")
        if target:
            shutil.copyfile(shot, Path(target) / "speedup_panel.png")

        # Save writes the JSON next to the notebook; Load overlays it for comparison
        button(panel, "Save").click()
        panel.locator(".widget-html-content", has_text="saved to speedup.json").wait_for(timeout=LIMIT_MS)
        saved = json.loads((lab_server.root / "speedup.json").read_text())
        assert saved["experiment"] == "inner" and len(saved["points"]) == POINTS
        button(panel, "Load").click()
        panel.locator(".widget-html-content", has_text=f"loaded speedup.json (inner, {POINTS} points)").wait_for(
            timeout=LIMIT_MS
        )
        assert panel.locator("table").count() == 2  # this run and the reloaded one
        assert error_outputs(page) == []
