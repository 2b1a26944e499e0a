"""Helpers of the browser tests that drive the MPI world sidebar and JupyterLab's Debugger as a
user does (clicks and keys): a notebook's cells run by a click and Shift+Enter, its tabs, a world's
section of the sidebar."""

from __future__ import annotations

from tests.browser.widgets_support import LIMIT_MS


#: The prompt of a cell: "[ ]:" never run, "[*]:" running, "[5]:" run.
PROMPT_TEXT = """([index]) => document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[index]
    .querySelector('.jp-InputPrompt').textContent"""
#: The execution count of a cell, or null while it runs or never ran.
PROMPT = f"""([index]) => {{
    const m = /\\[(\\d+)\\]/.exec(({PROMPT_TEXT})([index]));
    return m ? Number(m[1]) : null;
}}"""


def world_of(page, cluster: str):
    return page.locator(f'#mpiworkbench-world-sidebar section[data-cluster="{cluster}"]')


#: What the page shows of the notebook and the focus: what a failed step says.
STATE = """() => {
    const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Cell')];
    const focused = document.activeElement;
    return {
        active: cells.findIndex(c => c.classList.contains('jp-mod-active')),
        edit: !!document.querySelector('.jp-NotebookPanel .jp-Notebook.jp-mod-editMode'),
        prompts: cells.map(c => c.querySelector('.jp-InputPrompt').textContent.trim()),
        focused: focused ? focused.tagName + '.' + focused.className : null,
        tabs: [...document.querySelectorAll('.lm-DockPanel-tabBar .lm-TabBar-tab')]
            .map(t => t.innerText.trim() + (t.classList.contains('lm-mod-current') ? ' (current)' : '')),
        dialogs: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText.trim())
    };
}"""


def run_cell(page, index: int) -> None:
    """Click into cell *index* and press Shift+Enter, as a user runs a cell; wait until the page
    shows the cell taken up (its prompt changed), or fail saying what the page showed."""
    before = page.evaluate(PROMPT_TEXT, [index])
    page.locator(".jp-NotebookPanel .jp-Cell").nth(index).locator(".jp-InputArea-editor").click()
    try:  # the cursor in the cell: what the user sees before pressing the keys
        page.wait_for_function("([index]) => { const c = document.querySelectorAll('.jp-NotebookPanel .jp-Cell')[index];"
                               " return c.classList.contains('jp-mod-active') && c.contains(document.activeElement) }",
                               arg=[index], timeout=LIMIT_MS)
    except Exception as exc:
        raise AssertionError(f"cell {index} not in edit mode after a click into it: {page.evaluate(STATE)}") from exc
    page.keyboard.press("Shift+Enter")
    try:
        page.wait_for_function(f"([index, before]) => ({PROMPT_TEXT})([index]) !== before", arg=[index, before],
                               timeout=LIMIT_MS)
    except Exception as exc:
        raise AssertionError(f"cell {index} not run after Shift+Enter: {page.evaluate(STATE)}") from exc


def tab(page, text: str):
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=text).first
