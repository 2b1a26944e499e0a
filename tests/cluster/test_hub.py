"""``mpiworkbench hub``: a JupyterHub for a class on the simulated cluster, each student's
JupyterLab a Slurm job of theirs on a compute node, their MPI world inside that job.

The simulated nodes (``tests/multinode.py``) get the course's accounts — a teacher and two
students, each with a home and a password — inside their own mount namespaces only (a
``passwd``, ``group`` and ``shadow`` of the test's bind-mounted over the machine's there: no
account is added to the machine). ``mpiworkbench hub write`` writes the hub's directory; ``hub
start`` runs it on the head node as root, the proxy on head's loopback, the hub's API on head's
cluster address. A client on head then logs each student in through the proxy (JupyterHub's login
form: PAM against the test's ``shadow``), starts their server (the hub's REST API, with the
student's own token), and, once their JupyterLab answers, runs ``Workbench()`` in a kernel there
(Jupyter's kernel protocol over the server's websocket). Both servers must be Slurm jobs of their
student on a compute node, each world of two ranks inside its job, its hosts the job's node. When
the hub stops, it cancels the jobs: nothing of the class may be left (job, process, /dev/shm file).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mpiworkbench.core.shm import WORLD_FILE_PREFIXES
from tests.cluster.slurm import processes_with_env, wait_until
from tests.multinode import client_json, simulated_cluster

pytestmark = pytest.mark.timeout(600)

#: Generous bound (seconds) on the hub's start, a server's start, a world's start.
LIMIT = 180
PYTHON = sys.executable
#: The course's accounts (uids far above the machine's own).
STUDENTS = ("student1", "student2")
TEACHER = "teacher1"
FIRST_UID = 47101

#: Run on head: log each student in (argv[2:]: name:password ...) through the proxy at argv[1],
#: start their server, run a workbench in a kernel there; one JSON line with what each saw.
CLASS_CLIENT = r'''
import json
import re
import sys
import time
import uuid

import requests
import websocket

base = sys.argv[1]
code = """
import json, os, time
from mpiworkbench import Workbench
from mpiworkbench.core.machine import rank_info
began = time.monotonic()
wb = Workbench(activate=False, timeout=120).start()
facts = {"ready_s": time.monotonic() - began, "n": wb.n, "hosts": sorted(wb.hosts.values()),
         "info": wb.run(rank_info), "job": os.environ.get("SLURM_JOB_ID"), "user": os.environ.get("USER"),
         "kernel_host": os.uname().nodename, "uid": os.getuid()}
wb.stop()
print("FACTS" + json.dumps(facts))
"""


def until(what, condition, limit=240):
    deadline = time.monotonic() + limit
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.25)


def run_in_kernel(session, server, token):
    headers = {"Authorization": f"token {token}"}
    kernel = session.post(f"{server}api/kernels", headers=headers, json={"name": "python3"}, timeout=60)
    kernel.raise_for_status()
    kid = kernel.json()["id"]
    ws = websocket.create_connection(f"{server.replace('http', 'ws', 1)}api/kernels/{kid}/channels",
                                     header=[f"Authorization: token {token}"], timeout=200)
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                                   "msg_type": "execute_request", "version": "5.3"},
                        "parent_header": {}, "metadata": {}, "channel": "shell",
                        "content": {"code": code, "silent": False, "store_history": False,
                                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    out, error = "", None
    while True:
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            out += msg["content"]["text"]
        elif kind == "error":
            error = "\n".join(msg["content"]["traceback"])
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    ws.close()
    session.delete(f"{server}api/kernels/{kid}", headers=headers, timeout=60)
    if error:
        raise SystemExit(f"the cell failed:\n{error}\n{out}")
    return json.loads(out.split("FACTS", 1)[1].strip().splitlines()[0])


report = {}
for account in sys.argv[2:]:
    name, password = account.split(":", 1)
    s = requests.Session()
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
    other = next(a.split(":")[0] for a in sys.argv[2:] if a.split(":")[0] != name)
    seen["other_students_server"] = requests.get(f"{base}/user/{other}/api/status", headers=api,
                                                 allow_redirects=False, timeout=60).status_code
    # and this student's server without any login: the proxy sends it to the hub's login
    seen["anonymous"] = requests.get(f"{server}api/status", allow_redirects=False, timeout=60).status_code
    seen["world"] = run_in_kernel(s, server, token)
    report[name] = seen
print(json.dumps(report), flush=True)
'''


@pytest.fixture(scope="module")
def nodes():
    """Head and node1, node2 of two Slurm CPUs each: one student's job per node."""
    yield from simulated_cluster(compute=2, cpus=2)


class Accounts:
    """The course's accounts inside the simulated nodes' mount namespaces only: the machine's
    ``passwd``, ``group`` and ``shadow`` plus the course's, bind-mounted over ``/etc`` in every
    node's namespace; homes in a directory of the test's."""

    def __init__(self, nodes, names: list[str]):
        self.root = Path(tempfile.mkdtemp(prefix="mpiwb-class-"))
        os.chmod(self.root, 0o755)
        self.passwords = {name: secrets.token_urlsafe(12) for name in names}
        self.uids = {name: FIRST_UID + i for i, name in enumerate(names)}
        passwd = Path("/etc/passwd").read_text()
        group = Path("/etc/group").read_text()
        shadow = Path("/etc/shadow").read_text()
        (self.root / "home").mkdir(mode=0o755)
        for name, uid in self.uids.items():
            home = self.root / "home" / name
            home.mkdir(mode=0o700)
            os.chown(home, uid, uid)
            digest = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=self.passwords[name],
                                    capture_output=True, text=True, check=True).stdout.strip()
            passwd += f"{name}:x:{uid}:{uid}:course account:{home}:/bin/bash\n"
            group += f"{name}:x:{uid}:\n"
            shadow += f"{name}:{digest}:19000:0:99999:7:::\n"
        for name, text in (("passwd", passwd), ("group", group), ("shadow", shadow)):
            (self.root / name).write_text(text)
        os.chmod(self.root / "shadow", 0o600)
        for node in nodes.hosts:
            for name in ("passwd", "group", "shadow"):
                nodes.on(node, "mount", "--bind", str(self.root / name), f"/etc/{name}")

    def expose_python(self, nodes) -> list[str]:
        """Let the students run this Python on the compute nodes. Its installation may sit in a
        directory only root may enter (a pyenv under ``/root``); a hub's users need an
        interpreter they can run, so in each compute node's mount namespace every such directory
        above it is covered with an empty one they may enter, the installation bound back in
        (nothing changes outside the namespaces). Returns the directories covered."""
        base = Path(sys.base_prefix).resolve()
        closed = [str(d) for d in reversed(base.parents) if d != Path("/") and not os.stat(d).st_mode & 0o001]
        if not closed:
            return []
        staging = self.root / "python"
        staging.mkdir(mode=0o755)
        for node in nodes.compute:
            nodes.on(node, "mount", "--bind", str(base), str(staging))
            for directory in closed:  # outermost first: each cover keeps the path to the next
                nodes.on(node, "mount", "-t", "tmpfs", "-o", "mode=0755,size=1m", "tmpfs", directory)
                nodes.on(node, "mkdir", "-p", str(base))
            nodes.on(node, "mount", "--bind", str(staging), str(base))
        return closed

    def home(self, name: str) -> Path:
        return self.root / "home" / name

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _world_files(nodes) -> dict[str, list[str]]:
    return {node: [n for n in nodes.on(node, "ls", "-A", "/dev/shm").stdout.split() if n.startswith(WORLD_FILE_PREFIXES)]
            for node in nodes.compute}


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # a port free on this machine; the hub's run in head's namespace
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_students_log_in_and_each_gets_a_slurm_job_with_their_world(nodes, tmp_path):
    # the students' sbatch and srun reach munge and read slurm.conf: the cluster's directory must
    # be traversable (its key stays readable by root only)
    os.chmod(nodes.root, 0o755)
    os.chmod(nodes.root / "munge", 0o711)
    accounts = Accounts(nodes, [TEACHER, *STUDENTS])
    accounts.expose_python(nodes)
    hub_dir = accounts.root / "hub"
    port = _free_port()
    env = {**nodes.env, "PATH": os.pathsep.join([str(Path(PYTHON).parent), nodes.env["PATH"]])}
    written = nodes.on(nodes.head, str(Path(PYTHON).with_name("mpiworkbench")), "hub", "write", str(hub_dir),
                       "--students", ",".join(STUDENTS), "--teachers", TEACHER, "--port", str(port),
                       "--hub-ip", nodes.head_addr, "--ranks", "2", "--runtime", "10", env=env)
    assert "wrote" in written.stdout, written
    log = tmp_path / "hub.log"
    began = time.monotonic()
    hub = nodes.spawn(nodes.head, str(Path(PYTHON).with_name("mpiworkbench")), "hub", "start", str(hub_dir),
                      log=log, env=env, cwd=hub_dir)
    base = f"http://127.0.0.1:{port}"

    def diagnose() -> str:
        text = ""
        for name in STUDENTS:
            for job_log in accounts.home(name).glob(".jupyterhub-slurm-*.log"):
                text += f"\n--- {name}: {job_log.name}\n" + job_log.read_text(errors="replace")[-4000:]
        if log.exists():  # without the client's polls
            lines = [line for line in log.read_text(errors="replace").splitlines() if " 200 GET " not in line]
            text += "\n--- the hub's log\n" + "\n".join(lines[-80:])
        return text + nodes.diagnose()

    def hub_up() -> bool:
        assert hub.poll() is None, f"the hub exited with {hub.returncode}\n{diagnose()}"
        probe = nodes.on(nodes.head, PYTHON, "-c", "import sys, urllib.request; "
                         "urllib.request.urlopen(sys.argv[1], timeout=10)", f"{base}/hub/api", check=False, env=env)
        return probe.returncode == 0

    jobs: list[str] = []
    try:
        wait_until(hub_up, "the hub to answer through the proxy", LIMIT, interval=0.25, diagnose=diagnose)
        hub_up_s = time.monotonic() - began
        accounts_arg = [f"{name}:{accounts.passwords[name]}" for name in STUDENTS]
        client = nodes.on(nodes.head, PYTHON, "-c", CLASS_CLIENT, base, *accounts_arg, env=env, cwd=tmp_path,
                          check=False, timeout=3 * LIMIT)
        if client.returncode != 0:
            pytest.fail(f"the class client failed:\n{client.stdout[-3000:]}\n{client.stderr[-5000:]}\n{diagnose()}")
        report = client_json(client)
        queue = nodes.run("squeue", "--noheader", "--format=%i %u %T %N %D %C").stdout.split("\n")
        jobs = [line.split()[0] for line in queue if line.strip()]
    finally:
        # stopping the hub cancels the servers' jobs (cleanup_servers)
        if hub.poll() is None:
            hub.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            hub.wait(timeout=LIMIT)
    hub_stopped = hub.returncode
    with contextlib.suppress(AssertionError):
        nodes.wait_for_no_jobs(limit=LIMIT)
    try:
        for name in STUDENTS:
            seen = report[name]
            assert seen["logged_in"] and seen["login_status"] == 200 and seen["lab_page"], seen
            assert seen["spawn_status"] in (201, 202), seen
            assert seen["wrong_password_status"] == 403, seen
            assert seen["other_students_server"] in (302, 403, 404), seen  # not theirs to reach
            assert seen["anonymous"] in (302, 403), seen
            world = seen["world"]
            job_line = next(line for line in queue if line.split() and line.split()[0] == world["job"])
            job, user, state, node, node_count, cpus = job_line.split()
            assert (user, state, node_count, cpus) == (name, "RUNNING", "1", "2"), job_line
            assert node in nodes.compute, job_line
            assert world["user"] == name and world["uid"] == accounts.uids[name], world
            assert world["kernel_host"] == node and world["n"] == 2, world
            assert world["hosts"] == [node, node], world
            assert [info["rank"] for info in world["info"]] == [0, 1], world
        assert report[STUDENTS[0]]["world"]["job"] != report[STUDENTS[1]]["world"]["job"], report
        assert hub_stopped is not None, f"the hub did not stop\n{diagnose()}"
        assert not nodes.jobs(), f"the servers' jobs outlived the hub: {nodes.jobs()}"
        for name in STUDENTS:
            uid = accounts.uids[name]
            wait_until(lambda: not [p for p in processes_with_env(f"SLURM_CONF={nodes.conf}")
                                    if os.stat(f"/proc/{p}").st_uid == uid],
                       f"{name}'s processes to end", LIMIT, diagnose=diagnose)
        assert _world_files(nodes) == {node: [] for node in nodes.compute}
        print(f"\nhub up {hub_up_s:.1f} s; " + "; ".join(
            f"{name}: spawn to lab page {report[name]['lab_s']:.1f} s, world ready {report[name]['world']['ready_s']:.1f} s"
            for name in STUDENTS) + f"; jobs {jobs}")
    finally:
        accounts.remove()
