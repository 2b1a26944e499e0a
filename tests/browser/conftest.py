"""The browser tier: JupyterLab on loopback, driven in Debian's Chromium by Playwright.

Fixtures
--------
lab_server
    A JupyterLab server (session-scoped) serving a scratch copy of ``notebooks/`` on
    127.0.0.1, with the settings ``mpiworkbench lab`` gives its lab (no news pop-up, no
    nbgrader UI: :func:`mpiworkbench.cli.lab.lab_settings`), stopped (and its kernels with it)
    at the end.
page
    A fresh Chromium page (headless); ``open_notebook(page, lab_server, name)`` opens a
    notebook and ``run_cells(page, k)`` runs the next *k* cells with Shift+Enter.
Screenshots go to :data:`ARTIFACTS`, outside the checkout (``mpiworkbench-test-artifacts`` in the
system's temporary directory, or ``$MPIWORKBENCH_ARTIFACTS``): no test writes into the working tree.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from mpiworkbench.cli.lab import lab_command, lab_settings
from tests import timetable
from tests.browser.lab_process import stop_lab
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
#: Where screenshots go (a failing test's too): outside the checkout, kept after the run.
ARTIFACTS = timetable.ARTIFACTS
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    process: subprocess.Popen

    def notebook_url(self, name: str) -> str:
        return f"{self.url}/lab/tree/{name}?token={self.token}"


def _wait_for_http(url: str, timeout: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early with code {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)  # polling a condition (the port answering), not a fixed wait
    raise TimeoutError(f"JupyterLab did not answer at {url} within {timeout} s")


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is needed for the browser tier: apt-get install chromium")
    root = tmp_path_factory.mktemp("lab")
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        shutil.copy(nb, root / nb.name)
    # the lab's own files beside the directory it serves, not in its file browser
    home = tmp_path_factory.mktemp("lab-home")
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["MPIWORKBENCH_SMALL"] = "1"
    # the user's settings (none: the lab's own defaults show) and open tabs, private to this run
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "user-settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(home / "workspaces")
    # the server's and its kernels' runtime files (the ranks' connection files among them)
    env["JUPYTER_RUNTIME_DIR"] = str(home / "runtime")
    log = open(home / "jupyterlab.log", "w")  # noqa: SIM115 - closed in the finalizer
    # `mpiworkbench lab`'s command and settings; a token of ours, and no request for news or
    # updates (there is no network here anyway)
    command = lab_command(root, "127.0.0.1", port, no_browser=True, settings_dir=lab_settings(home / "app"))
    process = subprocess.Popen(
        # (the app exposed as window.jupyterapp: a test can run JupyterLab's commands)
        [*command, f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    server = LabServer(f"http://127.0.0.1:{port}", token, root, process)
    try:
        _wait_for_http(f"{server.url}/api/status?token={token}", 120, process)
        yield server
    finally:
        stop_lab(process)  # Jupyter's clean shutdown: kernels first
        log.close()


@pytest.fixture
def page(lab_server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        pg = context.new_page()
        pg.set_default_timeout(60_000)
        try:
            yield pg
        finally:
            context.close()
            browser.close()


def write_notebook(server: LabServer, name: str, cells: list[str]) -> str:
    """Write a notebook of code *cells* into the server's root and return its name."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, server.root / name)
    return name


def open_notebook(page, server: LabServer, name: str) -> None:
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    # the kernel must be connected and idle before we run cells, or runs are dropped
    page.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=120_000)
    page.locator(".jp-NotebookPanel .jp-Cell").first.click()
    page.keyboard.press("Escape")  # command mode on the first cell


_ACTIVE_INDEX = """() => Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Cell'))
    .findIndex(c => c.classList.contains('jp-mod-active'))"""

_CELL_DONE = r"""([index]) => {
    const cells = Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Cell'));
    const cell = cells[index];
    if (!cell || !cell.classList.contains('jp-CodeCell')) return true;
    const prompt = cell.querySelector('.jp-InputPrompt');
    return prompt && /\[\d+\]/.test(prompt.textContent);
}"""


def run_cells(page, count: int, timeout_ms: int = 300_000) -> None:
    """Run the next *count* cells one by one, each to completion (Shift+Enter, then wait)."""
    for _ in range(count):
        index = page.evaluate(_ACTIVE_INDEX)
        page.keyboard.press("Shift+Enter")
        page.wait_for_function(_CELL_DONE, arg=[index], timeout=timeout_ms)


def wait_idle(page, timeout_ms: int = 300_000) -> None:
    """Wait until the kernel has run everything queued."""
    page.wait_for_function(
        """() => {
            const cells = document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt');
            return Array.from(cells).every(p => !p.textContent.includes('*'));
        }""",
        timeout=timeout_ms,
    )


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path), full_page=False)
    return path


def kernel_sessions(server: LabServer) -> list[dict]:
    with urllib.request.urlopen(f"{server.url}/api/sessions?token={server.token}", timeout=10) as r:
        return json.load(r)


def shutdown_kernels(server: LabServer) -> None:
    """Shut every kernel down through the REST API (its atexit stops its cluster)."""
    for session in kernel_sessions(server):
        request = urllib.request.Request(
            f"{server.url}/api/sessions/{session['id']}?token={server.token}", method="DELETE"
        )
        try:
            urllib.request.urlopen(request, timeout=60).close()
        except urllib.error.HTTPError as exc:  # gone meanwhile (a console's session, with its kernel's)
            if exc.code != 404:
                raise
