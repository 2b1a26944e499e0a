"""Helpers shared by the browser tests of the live widgets (wave, CG, speedup, notebook 01).

Everything waits on a page condition (``wait_for_function``, ``locator.wait_for``) with a
generous limit; nothing sleeps for a fixed time. ipywidgets 8 renders a widget's
``description`` as a ``<label>`` next to its control and a button's as its text, so the
controls are found by the descriptions their panels promise to keep stable.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Iterator

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.browser.conftest import LabServer, run_cells, screenshot, shutdown_kernels, write_notebook
from tests.process_tree import leftover_cluster_processes

#: Limit for anything that waits on the cluster (a loaded two-core machine is slow).
LIMIT_MS = 300_000

#: Output areas of the open notebook.
OUTPUTS = ".jp-NotebookPanel .jp-OutputArea-output"

#: The rendered text of every error or stderr output of the open notebook.
_ERROR_OUTPUTS = """() => Array.from(document.querySelectorAll(
    '.jp-NotebookPanel .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
    .map(e => e.textContent)"""


#: A JupyterLab workspace of these tests alone, reset on every open (see :func:`open_fresh`).
WORKSPACE = "mpiwb-widget-tests"


def open_fresh(page, server: LabServer, name: str, workspace: str = WORKSPACE) -> None:
    """Open notebook *name* as the only document of a freshly reset workspace.

    ``conftest.open_notebook`` opens ``/lab/tree/<name>`` in the *default* workspace, whose
    layout JupyterLab keeps in ``~/.jupyter/lab/workspaces`` across servers: notebooks
    another run left open come back as hidden tabs, and ``.jp-NotebookPanel .jp-Cell``
    then finds their cells too. A named workspace reset on load (``?reset``) holds only
    this notebook. Pages open at once (two notebooks side by side) each need a *workspace*
    of their own.
    """
    page.goto(f"{server.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={server.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
    panels = page.locator(".jp-NotebookPanel")
    assert panels.count() == 1, f"expected only {name} open, found {panels.count()} notebooks"
    page.locator(".jp-NotebookPanel .jp-Cell").first.click()
    page.keyboard.press("Escape")  # command mode on the first cell


def button(scope, label: str):
    """A button (plain or toggle) by its exact label (an icon adds no text)."""
    return scope.locator("button").filter(has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))


def control(scope, kind: str, description: str):
    """The ``.widget-<kind>`` control whose description label is *description*.

    *kind* is ipywidgets' CSS suffix: ``dropdown``, ``text``, ``slider``, ``select-multiple``…
    """
    label = scope.page.locator("label", has_text=re.compile(rf"^\s*{re.escape(description)}\s*$"))
    return scope.locator(f".widget-{kind}").filter(has=label)


def cell_output(page, index: int):
    """The output area of cell *index* (0-based, markdown cells count) of the open notebook."""
    return page.locator(".jp-NotebookPanel .jp-Cell").nth(index).locator(".jp-OutputArea")


def wait_number(
    page,
    pattern: str,
    minimum: float | None = None,
    maximum: float | None = None,
    not_multiple_of: int | None = None,
    timeout_ms: int = LIMIT_MS,
) -> float:
    """Wait until an HTML widget's text matches *pattern* with its group 1 in [minimum, maximum]
    (and, if given, not a multiple of *not_multiple_of*).

    Returns that number. *pattern* is a JavaScript regular expression with one number group.
    """
    handle = page.wait_for_function(
        """([pattern, lo, hi, mod]) => {
            const re = new RegExp(pattern);
            for (const el of document.querySelectorAll('.jp-NotebookPanel .widget-html-content')) {
                const m = re.exec(el.textContent);
                if (!m) continue;
                const n = Number(m[1]);
                if ((lo === null || n >= lo) && (hi === null || n <= hi) && (mod === null || n % mod !== 0)) {
                    return {value: n};  // an object: a count of 0 is falsy
                }
            }
            return null;
        }""",
        arg=[pattern, minimum, maximum, not_multiple_of],
        timeout=timeout_ms,
    )
    return float(handle.json_value()["value"])


def click_until_number(
    page,
    target,
    pattern: str,
    expected: float | None = None,
    not_multiple_of: int | None = None,
    attempts: int = 6,
    attempt_ms: int = 60_000,
) -> float:
    """Click *target* until the status number reaches *expected* (or is not a multiple of
    *not_multiple_of*); returns it.

    The live panels ignore a click while a background step is still running (its redraw
    included), so a click can be dropped: then the number never moves and we click again.
    A click that is taken holds the panel busy until its redraw is done, so a repeated
    click during a slow step is itself dropped and never counted twice.
    """
    for _attempt in range(attempts):
        target.click()
        try:
            return wait_number(page, pattern, expected, expected, not_multiple_of, timeout_ms=attempt_ms)
        except PlaywrightTimeout:
            continue
    raise AssertionError(
        f"after {attempts} clicks the status never showed {pattern!r} = {expected}"
        f"{'' if not_multiple_of is None else f' (not a multiple of {not_multiple_of})'};"
        f" it shows {read_number(page, pattern)}"
    )


_WATCH_REDRAWS = """([status, images]) => {
    const log = window.__redrawLog = [];
    new MutationObserver(() => log.push({status: status.textContent}))
        .observe(status, {childList: true, subtree: true, characterData: true});
    images.forEach((img, i) => new MutationObserver(() => log.push({image: i}))
        .observe(img, {attributes: true, attributeFilter: ['src']}));
}"""

_REDRAW_DONE = """([pattern, n, last]) => {
    const re = new RegExp(pattern);
    const log = window.__redrawLog;
    let shown = -1;
    log.forEach((e, i) => {
        if (e.status !== undefined) { const m = re.exec(e.status); if (m && Number(m[1]) === n) shown = i; }
    });
    return shown >= 0 && log.slice(shown + 1).some(e => e.image === last);
}"""


def watch_redraws(page, status, images) -> None:
    """Log, from now on, every change of the *status* element and of the ``src`` of *images*
    (a locator of several ``<img>``), in order; see :func:`wait_redrawn`."""
    handles = [images.nth(i).element_handle() for i in range(images.count())]
    page.evaluate(_WATCH_REDRAWS, [status.element_handle(), handles])


def wait_redrawn(page, pattern: str, number: float, last_image: int, timeout_ms: int = LIMIT_MS) -> None:
    """Wait until the status showed *number* (group 1 of *pattern*) and image *last_image*
    changed after it: a panel that redraws status first and that image last is then done."""
    page.wait_for_function(_REDRAW_DONE, arg=[pattern, number, last_image], timeout=timeout_ms)


def read_number(page, pattern: str) -> float | None:
    """The current group-1 number of the first HTML widget matching *pattern* (None if none)."""
    return page.evaluate(
        """([pattern]) => {
            const re = new RegExp(pattern);
            for (const el of document.querySelectorAll('.jp-NotebookPanel .widget-html-content')) {
                const m = re.exec(el.textContent);
                if (m) return Number(m[1]);
            }
            return null;
        }""",
        [pattern],
    )


def image_sources(images) -> list[str]:
    """The ``src`` of every image the locator matches (blob URLs: a new one per redraw)."""
    return [images.nth(i).get_attribute("src") or "" for i in range(images.count())]


def wait_src_changed(page, image, old: str, timeout_ms: int = LIMIT_MS) -> str:
    """Wait until *image* (a locator of one ``<img>``) shows a ``src`` other than *old*."""
    page.wait_for_function(
        "([el, old]) => el.getAttribute('src') && el.getAttribute('src') !== old",
        arg=[image.element_handle(), old],
        timeout=timeout_ms,
    )
    return image.get_attribute("src")


def wait_image_loaded(page, image, timeout_ms: int = LIMIT_MS) -> None:
    """Wait until *image* shows a decoded picture (not an empty or broken ``src``)."""
    page.wait_for_function(
        "([el]) => el.getAttribute('src') && el.complete && el.naturalWidth > 0",
        arg=[image.element_handle()],
        timeout=timeout_ms,
    )


def wait_kernel_idle(page, timeout_ms: int = LIMIT_MS) -> None:
    """Wait until the status bar shows the kernel idle (its message handlers are done)."""
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=timeout_ms)


def error_outputs(page) -> list[str]:
    """Text of every error/stderr output in the open notebook."""
    return page.evaluate(_ERROR_OUTPUTS)


def wait_no_cluster_left(server_pid: int, timeout: float = 60, others: tuple[int, ...] = ()) -> list[str]:
    """Poll until no cluster process of this test run is left (except the lab server, the
    still open browser and the *others* that run on: another lab of this worker's)."""
    deadline = time.monotonic() + timeout
    leftovers = _cluster_leftovers(server_pid, others)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.2)  # polling the condition "processes gone", not a fixed wait
        leftovers = _cluster_leftovers(server_pid, others)
    return leftovers


def _cluster_leftovers(server_pid: int, others: tuple[int, ...] = ()) -> list[str]:
    """Leftovers of this run, except the test's own browser (the ``page`` fixture closes it)."""
    return [line for line in leftover_cluster_processes(exclude=(server_pid, *others))
            if "/chromium/" not in line.split()[1]]


@contextlib.contextmanager
def kernel_session(page, server: LabServer, name: str, others: tuple[int, ...] = ()) -> Iterator[None]:
    """Run a test body, then shut every kernel down and check no cluster outlived it (*others*:
    processes that run on meanwhile, such as the session's lab beside a lab of the test's own).

    On failure a screenshot ``<name>-failure.png`` is kept and the notebook's outputs are
    printed; the kernels are shut down in every case.
    """
    ok = False
    try:
        yield
        ok = True
    finally:
        if not ok:
            with contextlib.suppress(Exception):
                screenshot(page, f"{name}-failure.png")
                print("outputs on the page:", page.locator(OUTPUTS).all_inner_texts())
        shutdown_kernels(server)
        leftovers = wait_no_cluster_left(server.process.pid, others=others)
        if ok:
            assert leftovers == [], "cluster processes outlived the kernel:\n" + "\n".join(leftovers)
        elif leftovers:
            print("cluster processes outlived the kernel:\n" + "\n".join(leftovers))


@contextlib.contextmanager
def panel_in_notebook(page, server: LabServer, name: str, cells: list[str], panel_cell: int):
    """Write *cells* into a notebook of its own, open it, run every cell and yield the output
    of *panel_cell* (the panel), all inside :func:`kernel_session` *name*."""
    notebook = write_notebook(server, f"browser_{name}.ipynb", cells)
    with kernel_session(page, server, name):
        open_fresh(page, server, notebook)
        run_cells(page, len(cells))
        yield cell_output(page, panel_cell)
