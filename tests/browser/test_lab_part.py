"""Jupyter as centres run it (issue 59, item 4 a and b): the lab from an environment of its own with
nothing of the workbench (``tests/lab_venv.py``: ``pip install jupyterlab ipywidgets``), the kernel
from the project's venv registered into it (``ipykernel install --prefix``), as a user of a centre
brings a kernel to the centre's JupyterLab. All by clicks and keys in Chromium.

Without the lab part: the lab has no world sidebar, and the kernel says so when asked for a rank's
connection file, naming the lab's own Python in the command that adds the sidebar and a terminal
console for the rank. Both are followed as written: the console reaches rank 1's kernel (it shows
a variable the ranks set), and the install line adds the lab part to the lab's environment. After
the lab's restart, the sidebar lists the kernel's world and its ranks, *Debug* on rank 1 pins the
Debugger there, a ``%%px --debug`` cell stops rank 1, and the Debugger's *Continue* ends the cell.
The lab part is removed again at the end (the lab's venv stays bare for the next run).

A centre's lab is often a venv of the centre's that the user may not write, and a venv sees no user
site (``pip install --user`` refuses it): the same install command, run where the lab's venv is
mounted read-only, puts the lab part in a folder of the user's and hands it to the lab in the user's
``jupyter_server_config.py``; the lab then serves the sidebar's endpoint and its lab extension.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import nbformat
import pytest

from mpiworkbench import lab as lab_package
from mpiworkbench.cli.labpart import BLOCK_BEGIN
from mpiworkbench.lab import protocol
from tests import lab_venv
from tests.browser.conftest import CHROMIUM_ARGS, LabServer, _wait_for_http, screenshot
from tests.browser.lab_process import stop_lab
from tests.browser.sidebar_support import run_cell, tab, world_of
from tests.browser.widgets_support import LIMIT_MS, cell_output, kernel_session
from tests.ports import free_port
from tests.process_tree import leftover_cluster_processes
from tests.terminal import Terminal

pytestmark = pytest.mark.cost(150, "a JupyterLab of its own environment started twice, the project's kernel "
                                   "in it: the advice without the lab part followed, then the sidebar and its Debug")

KERNEL = "mpiwb-project"
KERNEL_TITLE = "MPI workbench (project venv)"
CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench(n=2, oversubscribe=True).start()\nprint('world:', wb.cluster.cluster_id)",
    "%%px\nkept = 40 + 2",
    "path = wb.connection_file(1)",
    "%%px --debug 1 --break 3\nfrom mpi4py import MPI\nx = MPI.COMM_WORLD.rank\ny = x + kept\nprint('debugged', y)",
    "wb.stop()\nprint('stopped')",
]
WORLD, KEEP, FILE, DEBUG, STOP = range(len(CELLS))


class CentreLab:
    """JupyterLab started from the lab-only venv, on loopback with a token of ours; its own
    settings, runtime and IPython directories (the kernel's too) under *home*."""

    def __init__(self, home: Path, root: Path) -> None:
        self.home, self.root, self.port, self.token = home, root, free_port(), secrets.token_hex(16)
        self.env = {**os.environ, "PATH": f"{lab_venv.python().parent}{os.pathsep}{os.environ.get('PATH', '')}",
                    "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_CONFIG_DIR": str(home / "config"),
                    "JUPYTERLAB_SETTINGS_DIR": str(home / "user-settings"),
                    "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"), "IPYTHONDIR": str(home / "ipython"),
                    "MPIWORKBENCH_SMALL": "1"}
        self.env.pop("VIRTUAL_ENV", None)
        self.server: LabServer | None = None

    def start(self) -> LabServer:
        log = open(self.home / "lab.log", "a")  # noqa: SIM115 - the lab's own output, read on failure
        command = [str(lab_venv.python()), "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
                   f"--ServerApp.port={self.port}", f"--ServerApp.root_dir={self.root}",
                   f"--IdentityProvider.token={self.token}", "--LabApp.news_url=",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if os.geteuid() == 0:
            command.append("--allow-root")
        process = subprocess.Popen(command, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=self.home)
        self.server = LabServer(f"http://127.0.0.1:{self.port}", self.token, self.root, process)
        _wait_for_http(f"{self.server.url}/api/status?token={self.token}", 120, process)
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            stop_lab(self.server.process)
            self.server = None


def open_notebook(page, server: LabServer, name: str) -> None:
    page.goto(f"{server.url}/lab/workspaces/lab-part/tree/{name}?reset&token={server.token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    page.get_by_text(f"{KERNEL_TITLE} | Idle").wait_for(timeout=LIMIT_MS)


def start_world(page) -> str:
    run_cell(page, WORLD)
    cell_output(page, WORLD).get_by_text("world:").wait_for(timeout=LIMIT_MS)
    run_cell(page, KEEP)
    page.get_by_text(f"{KERNEL_TITLE} | Idle").wait_for(timeout=LIMIT_MS)
    return cell_output(page, WORLD).inner_text().split("world:")[1].split()[0]


def line_after(text: str, lead: str) -> str:
    """The command that follows *lead* on its line of *text* (up to two spaces, or the line's end)."""
    found = re.search(re.escape(lead) + r"\s*(.+?)(?:\s{2,}|$)", text, re.MULTILINE)
    assert found, f"no {lead!r} in: {text}"
    return found.group(1)


def console_says(command: str, code: str, expect: str, env: dict[str, str]) -> str:
    """Run the terminal console *command* as a user types it (:class:`tests.terminal.Terminal`),
    type *code* at its first prompt; what it printed, once *expect* shows."""
    console = Terminal(command, env)
    try:
        shown = console.expect("In [")
        console.type(code, enter="\r")
        return shown + console.expect(expect)
    finally:
        console.close(end=True)


def test_a_centres_lab_with_the_users_kernel_gets_the_sidebar_by_the_command_the_kernel_names(tmp_path):
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is needed for the browser tier: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    lab_python = lab_venv.build()
    home, root = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    root.mkdir()
    lab = CentreLab(home, root)
    # the user's kernel, from the project's venv, registered into the lab's environment
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(lab_python.parents[1]),
                    "--name", KERNEL, "--display-name", KERNEL_TITLE], check=True, capture_output=True, timeout=120)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL_TITLE, "language": "python"}
    nbformat.write(nb, root / "centre.ipynb")
    # the labs this worker runs already (the session's, for the tier's other tests): they run on
    others = tuple(int(line.split(":")[0]) for line in leftover_cluster_processes() if " -m jupyterlab " in line)
    uninstall = [str(lab_python), "-m", "pip", "uninstall", "-y", "-q", "mpiworkbench-lab"]
    subprocess.run(uninstall, capture_output=True, timeout=300)  # bare, whatever a failed run left
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(60_000)
        try:
            server = lab.start()
            with kernel_session(page, server, "lab-part-bare", others):
                open_notebook(page, server, "centre.ipynb")
                start_world(page)
                run_cell(page, FILE)
                said = cell_output(page, FILE)
                said.get_by_text("shows the MPI world sidebar").wait_for(timeout=LIMIT_MS)
                text = said.inner_text()
                assert page.locator('.jp-SideBar .lm-TabBar-tab[data-id="mpiworkbench-world-sidebar"]').count() == 0
                install = line_after(text, "Add it, then restart the lab:")
                assert f"--python {lab_python}" in install, text  # the lab's own Python, found from its process
                console = line_after(text, "Meanwhile, in any terminal of this host:")
                shown = console_says(console, "print('RANK', __import__('mpi4py').MPI.COMM_WORLD.rank, 'KEPT', kept)",
                                     "KEPT 42", env=lab.env)
                assert "RANK 1 KEPT 42" in shown, shown[-2000:]
                run_cell(page, STOP)
                cell_output(page, STOP).get_by_text("stopped").wait_for(timeout=LIMIT_MS)
            added = subprocess.run(shlex.split(install), capture_output=True, text=True, timeout=600, env=lab.env)
            assert added.returncode == 0, added.stdout + added.stderr
            lab.stop()

            server = lab.start()  # the lab part loads at the lab's start
            with kernel_session(page, server, "lab-part-added", others):
                open_notebook(page, server, "centre.ipynb")
                page.locator('.jp-SideBar .lm-TabBar-tab[data-id="mpiworkbench-world-sidebar"]').click()
                cluster = start_world(page)
                world_of(page, cluster).locator('.jp-mpiwb-group[data-state="idle"][data-ranks="0,1"]') \
                    .wait_for(timeout=LIMIT_MS)
                world_of(page, cluster).locator('.jp-mpiwb-rank[data-rank="1"] .jp-mpiwb-debug').click()
                page.locator("#mpiworkbench-world-sidebar .jp-mpiwb-pin",
                             has_text=f"Debugger on rank 1 of {cluster}").wait_for(timeout=LIMIT_MS)
                tab(page, "centre.ipynb").click()  # back to the notebook, as the user goes (Debug opened a console)
                run_cell(page, DEBUG)
                world_of(page, cluster).locator('.jp-mpiwb-group[data-state="stopped"][data-ranks="1"]',
                                                has_text="cell line 3").wait_for(timeout=LIMIT_MS)
                screenshot(page, "lab_part_rank1_stopped.png")
                page.locator(".jp-DebuggerSidebar [data-command='debugger:continue'][title^='Continue']:not([disabled])") \
                    .first.click()
                cell_output(page, DEBUG).get_by_text("debugged 43").wait_for(timeout=LIMIT_MS)
                assert "debugged 42" in cell_output(page, DEBUG).inner_text()
                tab(page, "centre.ipynb").click()
                run_cell(page, STOP)
                cell_output(page, STOP).get_by_text("stopped").wait_for(timeout=LIMIT_MS)
        finally:
            browser.close()
            lab.stop()
            subprocess.run(uninstall, capture_output=True, timeout=300)


def read_only(path: Path, command: list[str]) -> list[str]:
    """*command* run where *path* is mounted read-only (a mount namespace of its own: nothing
    changes for the rest of the machine)."""
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(path), *command]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a read-only mount of the lab's venv needs root and util-linux's unshare")
def test_a_read_only_lab_venv_gets_the_lab_part_from_a_folder_of_the_users(tmp_path):
    lab_python = lab_venv.build()
    home, root = tmp_path / "home", tmp_path / "root"
    home.mkdir()
    root.mkdir()
    lab = CentreLab(home, root)
    lab.env["HOME"] = str(home)  # the user's own Jupyter folders: ~/.jupyter, ~/.local/share/jupyter
    config = home / "config" / "jupyter_server_config.py"  # (the lab's JUPYTER_CONFIG_DIR)
    config.parent.mkdir()
    config.write_text("c.ServerApp.shutdown_no_activity_timeout = 0  # the user's own line\n")
    uninstall = [str(lab_python), "-m", "pip", "uninstall", "-y", "-q", "mpiworkbench-lab"]
    subprocess.run(uninstall, capture_output=True, timeout=300)  # bare, whatever a failed run left
    install = [sys.executable, "-m", "mpiworkbench", "lab-part", "install", "--python", str(lab_python)]
    for _ in range(2):  # twice: the second replaces what the first wrote
        added = subprocess.run(read_only(lab_python.parents[1], install), capture_output=True, text=True,
                               timeout=600, env=lab.env)
        assert added.returncode == 0, added.stdout + added.stderr
        assert "read-only" in added.stdout and "--target" in added.stdout, added.stdout
    assert subprocess.run([str(lab_python), "-c", "import mpiworkbench_lab"], capture_output=True,
                          timeout=120).returncode != 0, "nothing was written into the lab's venv"
    written = config.read_text()
    assert written.startswith("c.ServerApp.shutdown_no_activity_timeout = 0") and written.count(BLOCK_BEGIN) == 1, written
    try:
        server = lab.start()
        with urllib.request.urlopen(f"{server.url}/mpiworkbench/worlds?token={server.token}", timeout=60) as answer:
            assert json.load(answer)["protocol"] == protocol.PROTOCOL
        with urllib.request.urlopen(f"{server.url}/lab?token={server.token}", timeout=60) as page:
            html = page.read().decode()
        data = json.loads(re.search(r'<script id="jupyter-config-data"[^>]*>(.*?)</script>', html, re.S).group(1))
        assert lab_package.LABEXTENSION_NAME in {e["name"] for e in data["federated_extensions"]}, data["federated_extensions"]
        # the marker a kernel reads to know that its user's lab shows the sidebar
        assert any(facts["pid"] == server.process.pid for facts in protocol.live_labs(home / "runtime"))
    finally:
        lab.stop()
