"""Notebook 01 (issue 3) in real Chromium: every cell runs in order, the side-by-side tables
show each column's result, and the syntax panel reruns a lesson on the cluster when clicked."""

from __future__ import annotations

import nbformat

import pytest

from mpiworkbench.syntax.lessons import COLUMNS, CURRENT_COLUMNS, HISTORIC_COLUMNS
from tests.browser.conftest import run_cells, screenshot
from tests.browser.widgets_support import (
    LIMIT_MS,
    button,
    cell_output,
    control,
    kernel_session,
    open_fresh,
    wait_kernel_idle,
)

pytestmark = pytest.mark.cost(65, (
                         "notebook 01 run cell by cell in JupyterLab: every backend's syntax and its "
                         "measurement against C"))

NOTEBOOK = "01_syntax_side_by_side.ipynb"
OK = "✔ matches the reference"
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'


def _cells(root):
    nb = nbformat.read(root / NOTEBOOK, as_version=4)
    return nb.cells


EMULATED = "(emulated on mpi4py)"


def _table_headers(table) -> list[str]:
    """Column names of a side-by-side table, historic ones marked ``name*``.

    textContent, not innerText: cells far off screen are not rendered (content-visibility).
    """
    texts = table.locator("tr").first.locator("th").all_text_contents()
    return [t.replace(EMULATED, "*").strip() for t in texts]


def test_syntax_notebook_runs_in_the_browser(page, lab_server):
    cells = _cells(lab_server.root)
    last = len(cells) - 1
    assert cells[last].cell_type == "code" and cells[last].source.strip() == "wb.stop()"
    hello = next(i for i, c in enumerate(cells) if 'run_lesson_on(wb, "hello")' in c.source)
    panel_cell = next(i for i, c in enumerate(cells) if "SyntaxPanel(wb" in c.source and "panel.widget" in c.source)
    may_raise = {i for i, c in enumerate(cells) if "raises-exception" in c.metadata.get("tags", [])}

    with kernel_session(page, lab_server, "syntax_notebook"):
        open_fresh(page, lab_server, NOTEBOOK)
        # every cell but the last (wb.stop()), in order, each to completion
        run_cells(page, last)
        wait_kernel_idle(page)
        page_cells = page.locator(".jp-NotebookPanel .jp-Cell")
        assert page_cells.count() == len(cells)
        for i, cell in enumerate(cells[:last]):
            if cell.cell_type != "code":
                continue
            # textContent: cells far off screen are not rendered (content-visibility), so
            # their innerText is empty
            prompt = page_cells.nth(i).locator(".jp-InputPrompt").text_content()
            assert "[" in prompt and "*" not in prompt and prompt.strip() != "[ ]:", f"cell {i} did not run: {prompt!r}"
            if i not in may_raise:
                errors = page_cells.nth(i).locator(STDERR).all_text_contents()
                assert errors == [], f"cell {i} shows an error or stderr:\n" + "\n".join(errors)

        # the side-by-side tables: C first, every column, each result checked on the cluster
        hello_table = cell_output(page, hello).locator("table").first
        assert _table_headers(hello_table) == [*CURRENT_COLUMNS, *(f"{c}*" for c in HISTORIC_COLUMNS)]
        assert hello_table.locator("td", has_text=OK).count() == len(COLUMNS)
        titles = page.locator(".jp-NotebookPanel .jp-OutputArea-output h4").all_text_contents()
        lesson_tables = [t for t in titles if "— thesis Table" in t]
        assert len(lesson_tables) >= 11, titles  # hello, send/recv, sendrecv, isend/irecv, seven collectives

        # the panel: its cell ran the gather lesson on 1 rank
        panel = cell_output(page, panel_cell)
        status = panel.locator(".widget-html-content").first
        panel.scroll_into_view_if_needed()
        assert status.text_content().startswith("1 rank(s): c ok"), status.text_content()
        assert "numba-mpi —" in status.text_content()  # a sub-communicator: numba-mpi reports unsupported

        # rerun from the browser: Broadcast on both ranks, current columns only
        control(panel, "dropdown", "Lesson").locator("select").select_option(label="Broadcast")
        panel.locator("h4", has_text="Broadcast — thesis Table 4.5").wait_for(timeout=LIMIT_MS)
        ranks = control(panel, "slider", "Ranks")
        ranks.locator(".noUi-handle").first.focus()
        page.keyboard.press("End")
        page.wait_for_function("([el]) => el.textContent.trim() === '2'",
                               arg=[ranks.locator(".widget-readout").element_handle()])
        control(panel, "checkbox", "Historic").locator("input").uncheck()
        table = panel.locator("table").first
        # (the table is re-rendered on every change: look it up afresh each time)
        page.wait_for_function(
            "([panel, n]) => { const t = panel.querySelector('table');"
            " return t !== null && t.querySelectorAll('tr')[0].querySelectorAll('th').length === n; }",
            arg=[panel.element_handle(), len(CURRENT_COLUMNS)],
        )
        wait_kernel_idle(page)
        button(panel, "Run").click()
        panel.locator(".widget-html-content", has_text="2 rank(s): ").wait_for(timeout=LIMIT_MS)
        wait_kernel_idle(page)
        assert status.text_content() == "2 rank(s): " + " · ".join(f"{c} ok" for c in CURRENT_COLUMNS)
        assert _table_headers(table) == list(CURRENT_COLUMNS)
        assert table.locator("td", has_text=OK).count() == len(CURRENT_COLUMNS)
        panel.scroll_into_view_if_needed()
        assert screenshot(page, "syntax_notebook_panel.png").stat().st_size > 10_000

        # the last cell stops the cluster
        page_cells.nth(last).locator(".jp-InputPrompt").click()  # the widgets took the focus
        run_cells(page, 1)
        wait_kernel_idle(page)
        assert page_cells.nth(last).locator(STDERR).count() == 0
