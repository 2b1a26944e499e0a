"""``mpiworkbench hub``: a JupyterHub for a class on the simulated cluster, each student's
JupyterLab a Slurm job of theirs on a compute node, their MPI world inside that job.

The simulated nodes (``tests/multinode.py``) get the course's accounts — a teacher and three
students, each with a home and a password — inside their own mount namespaces only (a
``passwd``, ``group`` and ``shadow`` of the test's bind-mounted over the machine's there: no
account is added to the machine). ``mpiworkbench hub write`` writes the hub's directory; ``hub
start`` runs it on the head node as root, the proxy on head's loopback, the hub's API on head's
cluster address. A client on head then logs each student in through the proxy (JupyterHub's login
form: PAM against the test's ``shadow``), starts their server (the hub's REST API, with the
student's own token), and, once their JupyterLab answers, runs ``Workbench()`` in a kernel there
(Jupyter's kernel protocol over the server's websocket). Every server must be a Slurm job of its
student on a compute node of its own, each world of two ranks inside its job, its hosts the job's
node, and no student may signal another's processes, read their environment or list their home.
Two answers are right, the third deadlocks: scores 1, 1 and 0. When the hub stops, it cancels the
jobs: nothing of the class may be left (job, process, /dev/shm file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hub_class import LIMIT, PYTHON, STUDENTS, TEACHER, ClassHub
from tests.notebooks.test_course_autograde import ASSIGNMENT, DEADLOCK, TIMEOUT_S
from tests.multinode import client_json, simulated_cluster

#: Beside the tier's other tests (it was ``alone`` until 2026-11-29). The world file once left in a
#: node's /dev/shm after the hub cancelled the jobs (seen twice, once when it ran alone; cause not
#: proven) is most likely a student's kernel killed under load before it had stopped its world: the
#: simulated Slurm sent SIGKILL 5 s after SIGTERM. It now waits Slurm's default 30 s (``KillWait``,
#: tests/cluster/slurm.py), as centres' Slurm does.
pytestmark = [pytest.mark.timeout(900),
              pytest.mark.cost(210, (
                               "a class on a JupyterHub over three simulated Slurm nodes: three students' servers, "
                               "each a Slurm job with a 2-rank world, graded through nbgrader; it waits mostly for "
                               "Slurm and JupyterLab to start"))]

REPO = Path(__file__).resolve().parents[2]

#: Run on head: argv[1] is the proxy, argv[2] a JSON plan: student → password and the code to run in
#: a kernel of their server (it prints FACTS + JSON; "keep": the kernel is left running) or the
#: "cells" to run one by one in one (kept) kernel, and their token once they have one. A student
#: without a token logs in through the proxy's login form, asks for a token and starts their server;
#: one JSON line with what each saw (and their token, for the next plan).
CLASS_CLIENT = r'''
import json
import re
import sys
import time
import uuid

import requests
import websocket

base, plan = sys.argv[1], json.loads(open(sys.argv[2]).read())


def until(what, condition, limit=240):
    deadline = time.monotonic() + limit
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.25)


def run_cells(session, server, token, cells, keep=True):
    """Run *cells* one by one in a new kernel: for each, its stdout, stderr, error (the ename,
    evalue and traceback the notebook shows) and how long it ran. A kept kernel keeps its world
    running until the hub stops (its job ends)."""
    headers = {"Authorization": f"token {token}"}
    kernel = session.post(f"{server}api/kernels", headers=headers, json={"name": "python3"}, timeout=60)
    kernel.raise_for_status()
    kid = kernel.json()["id"]
    ws = websocket.create_connection(f"{server.replace('http', 'ws', 1)}api/kernels/{kid}/channels",
                                     header=[f"Authorization: token {token}"], timeout=600)
    seen = []
    for code in cells:
        msg_id, began = uuid.uuid4().hex, time.monotonic()
        ws.send(json.dumps({"header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                                       "msg_type": "execute_request", "version": "5.3"},
                            "parent_header": {}, "metadata": {}, "channel": "shell",
                            "content": {"code": code, "silent": False, "store_history": True,
                                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
        cell = {"stdout": "", "stderr": "", "error": None}
        while True:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "stream":
                cell[msg["content"]["name"]] += msg["content"]["text"]
            elif kind == "error":
                cell["error"] = {k: msg["content"][k] for k in ("ename", "evalue", "traceback")}
            elif kind == "status" and msg["content"]["execution_state"] == "idle":
                break
        cell["seconds"] = time.monotonic() - began
        seen.append(cell)
    ws.close()
    if not keep:
        session.delete(f"{server}api/kernels/{kid}", headers=headers, timeout=60)
    return seen


def run_in_kernel(session, server, token, code, keep=False):
    """Run *code* (it prints FACTS + JSON) in a new kernel; what it printed after FACTS."""
    cell, = run_cells(session, server, token, [code], keep)
    if cell["error"]:
        raise SystemExit("the cell failed:\n" + "\n".join(cell["error"]["traceback"]) + "\n" + cell["stdout"])
    return json.loads(cell["stdout"].split("FACTS", 1)[1].strip().splitlines()[0])


def log_in_and_spawn(s, name, password, names):
    seen = {}
    login = s.get(f"{base}/hub/login", timeout=60)
    xsrf = s.cookies.get("_xsrf") or re.search(r'name="_xsrf" value="([^"]+)"', login.text).group(1)
    # to the hub's home, not the default spawn page: the server is started below, and timed
    logged = s.post(f"{base}/hub/login?next=%2Fhub%2Fhome", data={"username": name, "password": password,
                                                                 "_xsrf": xsrf}, timeout=60)
    seen["login_status"] = logged.status_code
    seen["logged_in"] = any(c.name.startswith("jupyterhub-session") for c in s.cookies)
    wrong = requests.post(f"{base}/hub/login?next=", data={"username": name, "password": password + "x", "_xsrf": xsrf},
                          cookies={"_xsrf": xsrf}, allow_redirects=False, timeout=60)
    seen["wrong_password_status"] = wrong.status_code
    # the student's own token, asked for with their login
    made = s.post(f"{base}/hub/api/users/{name}/tokens", json={"note": "class test", "expires_in": 3600},
                  headers={"X-XSRFToken": s.cookies.get("_xsrf") or xsrf}, timeout=60)
    made.raise_for_status()
    token = made.json()["token"]
    api = {"Authorization": f"token {token}"}
    began = time.monotonic()
    seen["spawn_status"] = s.post(f"{base}/hub/api/users/{name}/server", headers=api, timeout=60).status_code
    until(f"{name}'s server", lambda: s.get(f"{base}/hub/api/users/{name}", headers=api, timeout=60)
          .json().get("servers", {}).get("", {}).get("ready"))
    server = f"{base}/user/{name}/"
    lab = until(f"{name}'s JupyterLab page", lambda: (r := s.get(f"{server}lab", headers=api, timeout=60)).ok and r)
    seen["lab_s"] = time.monotonic() - began
    seen["lab_page"] = "JupyterLab" in lab.text
    # another student's server, asked with this student's token
    other = next((other for other in names if other != name), None)
    if other is not None:
        seen["other_students_server"] = requests.get(f"{base}/user/{other}/api/status", headers=api,
                                                     allow_redirects=False, timeout=60).status_code
    # and this student's server without any login: the proxy sends it to the hub's login
    seen["anonymous"] = requests.get(f"{server}api/status", allow_redirects=False, timeout=60).status_code
    seen["token"] = token
    return seen


report = {}
names = list(plan)
for name, student in plan.items():
    s = requests.Session()
    server = f"{base}/user/{name}/"
    seen = {}
    token = student.get("token")
    if token is None:
        seen.update(log_in_and_spawn(s, name, student["password"], names))
        token = seen["token"]
    if "cells" in student:
        seen["cells"] = run_cells(s, server, token, student["cells"])
    else:
        seen["kernel"] = run_in_kernel(s, server, token, student["code"], keep=student.get("keep", False))
    seen["token"] = token
    report[name] = seen
print(json.dumps(report), flush=True)
'''

#: What each student does in a kernel of their server, first: fetch notebook 00 (nbgrader, with the
#: settings the hub gave the server), answer its exercise (ANSWER: "solution" or "deadlock") and
#: submit; then start a world of their job's allocation, say what it is, and what of the other
#: students (OTHERS: uid -> home) this student can reach while the earlier students' worlds run:
#: their processes are listed in /proc (one machine's pids), but none may be signalled (kill with
#: signal 0 asks without sending) or have its environment read, and no home (IPython profiles,
#: connection files) may be listed. The world is left running: the kernel is kept until the hub
#: stops, so the later students' probes meet it.
WORK = """
import json, os, subprocess, time

import nbformat

from mpiworkbench import Workbench, exercises
from mpiworkbench.core.machine import rank_info


def nbgrader(*args):
    done = subprocess.run(["nbgrader", *args], capture_output=True, text=True, timeout=300)
    return [done.returncode, (done.stdout + done.stderr)[-3000:]]


course = {"fetch": nbgrader("fetch_assignment", "00_start_here")}
path = os.path.expanduser("~/00_start_here/00_start_here.ipynb")
nb = nbformat.read(path, as_version=4)
if ANSWER == "solution":
    exercises.inject(nb, "00_start_here", "solution")
else:
    for index, _ in exercises.answer_cells(nb):
        nb.cells[index].source = DEADLOCK
nbformat.write(nb, path)
course["submit"] = nbgrader("submit", "00_start_here")
began = time.monotonic()
wb = Workbench(activate=False, timeout=120).start()
facts = {"ready_s": time.monotonic() - began, "n": wb.n, "hosts": sorted(wb.hosts.values()),
         "info": wb.run(rank_info), "job": os.environ.get("SLURM_JOB_ID"), "user": os.environ.get("USER"),
         "kernel_host": os.uname().nodename, "uid": os.getuid(), "course": course}
reach = {"processes": [], "signalled": [], "environ_read": [], "homes_listed": []}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        if os.stat(f"/proc/{pid}").st_uid not in OTHERS:
            continue
        reach["processes"].append(int(pid))
        os.kill(int(pid), 0)
        reach["signalled"].append(int(pid))
    except OSError:
        pass
    try:
        open(f"/proc/{pid}/environ", "rb").read()
        reach["environ_read"].append(int(pid))
    except OSError:
        pass
for home in OTHERS.values():
    try:
        os.listdir(home)
        reach["homes_listed"].append(home)
    except OSError:
        pass
facts["reach"] = reach
print("FACTS" + json.dumps(facts))
"""
#: ... and once the teacher has released the feedback: fetch it, and read it.
FEEDBACK = """
import glob, json, os, subprocess

done = subprocess.run(["nbgrader", "fetch_feedback", "00_start_here"], capture_output=True, text=True, timeout=300)
pages = sorted(glob.glob(os.path.expanduser("~/00_start_here/feedback/*/00_start_here.html")))
print("FACTS" + json.dumps({"fetch": [done.returncode, (done.stdout + done.stderr)[-3000:]],
                            "feedback": open(pages[-1]).read() if pages else None}))
"""
#: The answers: the first two students' right, the third's deadlocks.
ANSWERS = dict(zip(STUDENTS, ("solution", "solution", "deadlock")))


@pytest.fixture(scope="module")
def nodes():
    """Head and node1, node2, node3 of two Slurm CPUs each: one student's job per node."""
    yield from simulated_cluster(compute=3, cpus=2)


def _plan(path: Path, students: dict) -> str:
    path.write_text(json.dumps(students))
    return str(path)


def test_a_class_on_the_hub_each_server_a_slurm_job_graded_through_nbgrader(nodes, tmp_path):
    hub = ClassHub(nodes, tmp_path / "hub.log", ranks=2)
    # the teacher's grading cluster: 2 ranks on head (issue 23's), in an IPython directory of its own
    grading = {"IPYTHONDIR": str(tmp_path / "teacher-ipython"), "MPIWORKBENCH_SMALL": "1"}
    try:
        hub.start()
        # the teacher releases notebook 00 of the course into the hub's exchange
        course = hub.accounts.home(TEACHER) / "course"
        cli = str(Path(PYTHON).with_name("mpiworkbench"))
        nbgrader = str(Path(PYTHON).with_name("nbgrader"))
        hub.teacher(cli, "course", "--nbgrader", str(course), "--only", ASSIGNMENT, "--notebooks",
                    str(REPO / "notebooks"), "--timeout", str(TIMEOUT_S), "--cell-timeout", "300", cwd=tmp_path)
        hub.teacher(nbgrader, "generate_assignment", ASSIGNMENT, cwd=course)
        hub.teacher(nbgrader, "release_assignment", ASSIGNMENT, cwd=course)
        work = {name: {"password": hub.accounts.passwords[name], "keep": True,
                       "code": f"ANSWER = {kind!r}\nDEADLOCK = {DEADLOCK!r}\nOTHERS = {_others(hub, name)!r}\n{WORK}"}
                for name, kind in ANSWERS.items()}
        client = nodes.on(nodes.head, PYTHON, "-c", CLASS_CLIENT, hub.base, _plan(tmp_path / "work.json", work),
                          env=hub.env, cwd=tmp_path, check=False, timeout=3 * LIMIT)
        if client.returncode != 0:
            pytest.fail(f"the class client failed:\n{client.stdout[-3000:]}\n{client.stderr[-5000:]}\n{hub.diagnose()}")
        report = client_json(client)
        queue = [line.split() for line in nodes.run("squeue", "--noheader", "--format=%i %u %T %N %D %C")
                 .stdout.splitlines() if line.strip()]
        # the teacher collects, autogrades (on the grading cluster) and releases the feedback
        hub.teacher(nbgrader, "collect", ASSIGNMENT, cwd=course)
        collected = sorted(p.relative_to(course / "submitted").parts[0]
                           for p in (course / "submitted").glob(f"*/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"))
        # (every submission run on the grading cluster, the deadlocked one into its timeout: over
        # 180 s when the suite's other lane loads the machine)
        hub.teacher(nbgrader, "autograde", ASSIGNMENT, cwd=course, extra=grading, limit=3 * LIMIT)
        hub.teacher(nbgrader, "generate_feedback", ASSIGNMENT, cwd=course)
        hub.teacher(nbgrader, "release_feedback", ASSIGNMENT, cwd=course)
        feedback = {name: {"token": report[name]["token"], "code": FEEDBACK} for name in STUDENTS}
        fetched = nodes.on(nodes.head, PYTHON, "-c", CLASS_CLIENT, hub.base, _plan(tmp_path / "feedback.json", feedback),
                           env=hub.env, cwd=tmp_path, check=False, timeout=3 * LIMIT)
        if fetched.returncode != 0:
            pytest.fail(f"fetching the feedback failed:\n{fetched.stdout[-3000:]}\n{fetched.stderr[-5000:]}")
        feedback = {name: seen["kernel"] for name, seen in client_json(fetched).items()}
        stopped = hub.stop()  # it cancels the servers' jobs (cleanup_servers)
        assert stopped is not None, f"the hub did not stop\n{hub.diagnose()}"
        hub.check_nothing_left()
        for name in STUDENTS:
            seen = report[name]
            assert seen["logged_in"] and seen["login_status"] == 200 and seen["lab_page"], seen
            assert seen["spawn_status"] in (201, 202), seen
            assert seen["wrong_password_status"] == 403, seen
            assert seen["other_students_server"] in (302, 403, 404), seen  # not theirs to reach
            assert seen["anonymous"] in (302, 403), seen
            world = seen["kernel"]
            job, user, state, node, node_count, cpus = next(line for line in queue if line[0] == world["job"])
            assert (user, state, node_count, cpus) == (name, "RUNNING", "1", "2"), queue
            assert node in nodes.compute, queue
            assert world["user"] == name and world["uid"] == hub.accounts.uids[name], world
            assert world["kernel_host"] == node and world["n"] == 2, world
            assert world["hosts"] == [node, node], world
            assert [info["rank"] for info in world["info"]] == [0, 1], world
            assert world["course"]["fetch"][0] == 0 and world["course"]["submit"][0] == 0, world["course"]
            assert feedback[name]["fetch"][0] == 0 and feedback[name]["feedback"], feedback[name]
            reach = world["reach"]  # nothing of another student's world is this student's to touch
            assert reach["signalled"] == reach["environ_read"] == reach["homes_listed"] == [], reach
        # the last student met the earlier students' running worlds (and servers) and could not touch them
        assert report[STUDENTS[-1]]["kernel"]["reach"]["processes"], report[STUDENTS[-1]]["kernel"]["reach"]
        assert len({report[name]["kernel"]["job"] for name in STUDENTS}) == len(STUDENTS), report
        assert collected == sorted(STUDENTS), collected
        assert _scores(course) == {STUDENTS[0]: 1.0, STUDENTS[1]: 1.0, STUDENTS[2]: 0.0}
        stuck = feedback[STUDENTS[2]]["feedback"]  # the deadlock's feedback holds the hang report
        assert "Where each rank is:" in stuck and "blocked in MPI_" in stuck, stuck[-3000:]
        print(f"\nhub up {hub.up_seconds:.1f} s; " + "; ".join(
            f"{name}: spawn to lab page {report[name]['lab_s']:.1f} s, world ready {report[name]['kernel']['ready_s']:.1f} s"
            for name in STUDENTS))
    finally:
        hub.stop()
        hub.accounts.remove()


def _others(hub: ClassHub, name: str) -> dict[int, str]:
    """The other students of the class: uid -> home."""
    return {hub.accounts.uids[other]: str(hub.accounts.home(other)) for other in STUDENTS if other != name}


def _scores(course: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {s.student.id: s.score for s in gradebook.assignment_submissions(ASSIGNMENT)}
