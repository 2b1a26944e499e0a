"""A student of the class in Chromium: the hub's login page, their JupyterLab started as a Slurm
job on a compute node of the simulated cluster, a notebook there whose ``Workbench()`` runs a
2-rank world inside that job. The job's time limit is three minutes: the notebook's last cell,
which would run for an hour, must end a minute before it with the workbench's message.

The cluster, the course's accounts and ``mpiworkbench hub`` are ``tests/hub_class.py``'s. The hub
listens on the head node's loopback, so the browser runs there too: a Playwright script started
inside head's namespaces drives Debian's Chromium (headless) and prints what it saw as JSON.
Screenshots (in the browser tier's ``ARTIFACTS`` directory): ``hub_login.png``, ``hub_class_lab.png``
and ``hub_time_limit.png``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.browser.conftest import ARTIFACTS, CHROMIUM_ARGS, REPO
from tests.hub_class import LIMIT, PYTHON, STUDENTS, ClassHub
from tests.multinode import client_json, simulated_cluster

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.cost(240, (
                                    "a student logs in to the class's JupyterHub on three simulated Slurm nodes in "
                                    "Chromium and runs a world inside their Slurm job, whose last cell waits for "
                                    "the job's three-minute time limit"))]

#: The student's notebook: a world of the job's allocation, where its ranks run, then stopped.
CELLS = [
    "from mpiworkbench import Workbench\nwb = Workbench().start()\nprint(wb.origin)",
    "import os, json\nprint('FACTS' + json.dumps({'n': wb.n, 'hosts': sorted(wb.hosts.values()), "
    "'job': os.environ['SLURM_JOB_ID'], 'user': os.environ['USER']}))",
    "%%px\nprint(f'rank {MPI.COMM_WORLD.rank} of {MPI.COMM_WORLD.size} on {MPI.Get_processor_name()}')",
    "%%px\nimport time\ntime.sleep(3600)",  # outlives the job: ends a minute before its time limit
]
#: The servers' time limit (minutes): long enough to reach the last cell, short enough to wait for.
RUNTIME_MIN = 3

#: Run inside head: argv = hub URL, student, password, screenshot directory, Chromium's arguments.
BROWSER_CLIENT = r'''
import json
import shutil
import sys
import time

from playwright.sync_api import sync_playwright

from tests.browser.conftest import run_cells

base, name, password, shots, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
seen = {}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=args)
    try:
        page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
        page.set_default_timeout(240_000)
        page.goto(f"{base}/hub/login")
        page.fill("#username_input", name)
        page.fill("#password_input", password)
        page.screenshot(path=f"{shots}/hub_login.png")
        began = time.monotonic()
        page.click("#login_submit")  # the hub spawns the server and sends the browser on to it
        page.wait_for_url(f"**/user/{name}/lab**")
        page.wait_for_selector(".jp-LabShell")
        seen["lab_s"] = time.monotonic() - began
        page.goto(f"{base}/user/{name}/lab/tree/class.ipynb")
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
        page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
        page.locator(".jp-NotebookPanel .jp-Cell").first.click()
        page.keyboard.press("Escape")
        began = time.monotonic()
        run_cells(page, 1)
        seen["world_s"] = time.monotonic() - began
        run_cells(page, 2)
        page.get_by_text("rank 0 of 2").wait_for()
        seen["news_popup"] = page.get_by_text("official Jupyter news").count()
        page.screenshot(path=f"{shots}/hub_class_lab.png")
        run_cells(page, 1, timeout_ms=600_000)  # the cell that would outlive the job
        page.get_by_text("JobTimeLimit: your Slurm job").wait_for()
        page.screenshot(path=f"{shots}/hub_time_limit.png")
        seen["outputs"] = page.locator(".jp-NotebookPanel .jp-OutputArea-output").all_inner_texts()
    finally:
        browser.close()
print(json.dumps(seen), flush=True)
'''


@pytest.fixture
def nodes():
    """Head and node1, node2 of two Slurm CPUs each."""
    yield from simulated_cluster(compute=2, cpus=2)


def test_a_student_logs_in_in_chromium_and_runs_a_world_inside_their_job(nodes, tmp_path):
    import nbformat

    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    hub = ClassHub(nodes, tmp_path / "hub.log", ranks=2, runtime=str(RUNTIME_MIN))
    name = STUDENTS[0]
    try:
        hub.start()
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in CELLS]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                           "language": "python"}
        path = hub.accounts.home(name) / "class.ipynb"
        nbformat.write(notebook, path)
        os.chown(path, hub.accounts.uids[name], hub.accounts.uids[name])
        ARTIFACTS.mkdir(exist_ok=True)
        env = {**hub.env, "PYTHONPATH": str(REPO)}
        client = nodes.on(nodes.head, PYTHON, "-c", BROWSER_CLIENT, hub.base, name, hub.accounts.passwords[name],
                          str(ARTIFACTS), json.dumps(CHROMIUM_ARGS), env=env, cwd=tmp_path, check=False,
                          timeout=3 * LIMIT)
        if client.returncode != 0:
            pytest.fail(f"the browser client failed:\n{client.stdout[-3000:]}\n{client.stderr[-5000:]}\n{hub.diagnose()}")
        seen = client_json(client)
        queue = [line.split() for line in nodes.run("squeue", "--noheader", "--format=%i %u %T %N").stdout.splitlines()
                 if line.strip()]
        assert hub.stop() is not None, f"the hub did not stop\n{hub.diagnose()}"
        hub.check_nothing_left()
        outputs = seen["outputs"]
        facts = json.loads(next(text for text in outputs if text.startswith("FACTS"))[len("FACTS"):])
        job, user, state, node = next(line for line in queue if line[0] == facts["job"])
        assert (user, state) == (name, "RUNNING") and node in nodes.compute, queue
        assert facts == {"n": 2, "hosts": [node, node], "job": job, "user": name}, facts
        assert any("started a cluster of its own: 2 MPI rank(s), launcher mpi" in text for text in outputs), outputs
        # %%px's output, one block per engine ("[stdout:0] rank 0 of 2 on node1")
        ranks = sorted(line.split("] ", 1)[-1] for text in outputs for line in text.splitlines() if "] rank " in line)
        assert ranks == [f"rank 0 of 2 on {node}", f"rank 1 of 2 on {node}"], outputs
        # the last cell, a minute before the job's time limit: the workbench's message, not a frozen tab
        assert outputs[-1].startswith(f"JobTimeLimit: your Slurm job {job} reaches its time limit ({RUNTIME_MIN}:00)"), outputs
        assert "the MPI world was stopped; save your notebook now" in outputs[-1], outputs
        assert seen["news_popup"] == 0, "the class's JupyterLab asks no questions of its students"
        # `make screenshots`: the student's JupyterLab and the time limit's message become the docs' pictures
        target = os.environ.get("MPIWORKBENCH_SCREENSHOT_DIR")
        if target:
            for picture in ("hub_class_lab.png", "hub_time_limit.png"):
                shutil.copyfile(ARTIFACTS / picture, Path(target) / picture)
        print(f"\nhub up {hub.up_seconds:.1f} s; in Chromium: login to JupyterLab {seen['lab_s']:.1f} s "
              f"(the server's Slurm job included), Workbench().start() cell {seen['world_s']:.1f} s")
    finally:
        hub.stop()
        hub.accounts.remove()
