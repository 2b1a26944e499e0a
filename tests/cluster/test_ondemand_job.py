"""The Open OnDemand app as a Slurm job (issue 59, item 4 c): the app rendered with Ruby's ERB as OOD
renders it (``tests/ondemand.py``), its scripts run by a job script of ours that does what OOD's
``basic`` template does, submitted with the rendered ``submit.yml``'s options as a user of the
simulated cluster (``tests/multinode.py``: head and two compute nodes; the user exists in their
namespaces only, ``tests/hub_class.py``'s accounts).

Then, from the head node as the Connect button would: the lab answers on the node, port and
password the job wrote into ``connection.yml``, under the path OOD's proxy forwards; a notebook's
kernel there (Jupyter's kernel protocol over the lab's websocket) starts ``Workbench()``, whose world
is the job's two ranks on both nodes; a rank blocked in a receive on the other node is named in
the hang report with its host. The job is cancelled; the simulated cluster's teardown checks that
nothing of it is left.

What our job script stands in for: OOD's job script around the templates — its helpers
(``find_port``, ``create_passwd``, ``wait_until_port_used``, ``clean_up``: ours do what OOD's
documented helpers do), ``host=$(hostname)``, sourcing ``before.sh``, forking ``script.sh``, sourcing
``after.sh`` and writing ``connection.yml``. Not covered: a real OOD (its proxy and login page).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.cluster.slurm import processes_with_env, wait_until
from tests.hub_class import Accounts
from tests.multinode import client_json, simulated_cluster
from tests.ondemand import render_app

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.cost(90, "the Open OnDemand app rendered and run as a Slurm job of a user on two simulated "
                                   "nodes: its lab answers, a notebook's world spans the job's nodes")]

LIMIT = 240
USER = "ooduser"

#: What OOD's "basic" template makes of the staged session: the helpers, then before.sh, script.sh
#: forked, after.sh, connection.yml (written once the lab listens: what makes OOD show Connect).
OOD_BASIC = r"""#!/bin/bash -l
port_used () { "${OOD_TEST_PYTHON}" -c 'import socket, sys; s = socket.socket(); s.settimeout(1); sys.exit(s.connect_ex((sys.argv[1], int(sys.argv[2]))))' "$1" "$2"; }
find_port () { local host="${1:-localhost}" port; for port in $(shuf -i 20000-60000 -n 100); do port_used "$host" "$port" || { echo "$port"; return 0; }; done; return 1; }
create_passwd () { tr -cd 'a-zA-Z0-9' < /dev/urandom 2> /dev/null | head -c "${1:-8}"; }
wait_until_port_used () { local hostport="$1" seconds="${2:-30}" i; for ((i = 0; i < seconds * 4; i++)); do port_used "${hostport%:*}" "${hostport##*:}" && return 0; sleep 0.25; done; return 1; }
clean_up () { pkill -P $$; exit "${1:-0}"; }
cd SESSION
host=$(hostname)
source template/before.sh
export host port
template/script.sh &
script=$!
source template/after.sh
printf 'host: %s\nport: %s\npassword: %s\n' "$host" "$port" "$password" > connection.yml.part
mv connection.yml.part connection.yml
wait "$script"
"""

#: Run on head as the Connect button's browser would reach the lab: argv[1] is connection.yml.
CLIENT = r'''
import json, sys, time, uuid
import requests, websocket, yaml

c = yaml.safe_load(open(sys.argv[1]))
server = f"http://{c['host']}:{c['port']}/node/{c['host']}/{c['port']}/"
headers = {"Authorization": f"token {c['password']}"}
deadline, last = time.monotonic() + 120, "nothing"
while True:
    try:
        answer = requests.get(server + "api/status", headers=headers, timeout=10)
        if answer.status_code == 200:
            break
        last = f"HTTP {answer.status_code}: {answer.text[:300]}"
    except requests.RequestException as exc:
        last = repr(exc)
    if time.monotonic() > deadline:
        raise SystemExit(f"the lab did not answer {server}api/status within 120 s; last: {last}")
    time.sleep(0.5)
refused = requests.get(server + "api/status", timeout=10).status_code
kid = requests.post(server + "api/kernels", headers=headers, json={"name": "python3"}, timeout=60).json()["id"]
ws = websocket.create_connection(f"ws://{c['host']}:{c['port']}/node/{c['host']}/{c['port']}/api/kernels/{kid}/channels",
                                 header=[f"Authorization: token {c['password']}"], timeout=600)
said = []
for code in json.loads(sys.argv[2]):
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "username": "t", "session": uuid.uuid4().hex,
                                   "msg_type": "execute_request", "version": "5.3"}, "parent_header": {}, "metadata": {},
                        "channel": "shell", "content": {"code": code, "silent": False, "store_history": True,
                                                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}))
    out = ""
    while True:
        msg = json.loads(ws.recv())
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            out += "\n".join(msg["content"]["traceback"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    said.append(out)
print(json.dumps({"refused": refused, "said": said}))
'''

CELLS = [
    "import json\nfrom mpiworkbench import Workbench\nwb = Workbench(activate=False, timeout=120).start()\n"
    "print('WORLD', wb.n)\nprint('HOSTS', json.dumps({r: h for r, h in sorted(wb.hosts.items())}))",
    "from mpiworkbench import ExecutionTimeout\nwb.timeout = 8\ntry:\n"
    "    wb.execute('from mpi4py import MPI\\nc = MPI.COMM_WORLD\\nif c.rank == 1:\\n    c.recv(source=0, tag=7)\\nelse:\\n    c.barrier()')\n"
    "except ExecutionTimeout as exc:\n    print('HANG', exc)\nwb.restart()\nprint('RESTARTED', wb.n)",
    "wb.stop()\nprint('STOPPED')",
]


@pytest.fixture(scope="module")
def nodes():
    yield from simulated_cluster(compute=2, cpus=2)


def test_the_rendered_app_runs_as_a_users_job_its_lab_answers_and_a_notebooks_world_spans_both_nodes(nodes):
    if shutil.which("ruby") is None:
        pytest.skip("needs Ruby to render the app's ERB as OOD does: apt-get install ruby (make test installs it)")
    # the user's sbatch and srun reach munge and read slurm.conf: the cluster's directory must be
    # traversable (the munge key stays readable by root only), as for the hub's students
    os.chmod(nodes.root, 0o755)
    os.chmod(nodes.root / "munge", 0o711)
    accounts = Accounts(nodes, [USER])
    job = None
    try:
        accounts.expose_python(nodes)
        work = accounts.home(USER) / "ondemand"
        work.mkdir()
        form = {"cluster": "mpiwb", "bc_account": "", "bc_queue": "", "bc_num_hours": "1", "num_nodes": "2",
                "tasks_per_node": "1", "modules": "",  # (no module system on the simulated nodes)
                "activate_environment": f"source {Path(sys.prefix)}/bin/activate"}
        session = render_app(work, form, connection={"host": "", "port": 0, "password": ""})
        native = [str(option) for option in yaml.safe_load((session / "submit.yml").read_text())["script"]["native"]]
        script = session / "job.sh"
        script.write_text(OOD_BASIC.replace("SESSION", shlex.quote(str(session))))  # OOD's staged_root
        script.chmod(0o755)
        for path in [work, *work.rglob("*")]:
            os.chown(path, accounts.uids[USER], accounts.uids[USER])
        # OOD submits with --export=NONE; SLURM_CONF stands for the slurm.conf a real site keeps at
        # its default path (the simulated cluster's is elsewhere)
        submitted = nodes.on(nodes.head, "runuser", "-u", USER, "--", "env", f"SLURM_CONF={nodes.conf}",
                             f"OOD_TEST_PYTHON={sys.executable}", "sbatch", "--parsable", "--export=SLURM_CONF,OOD_TEST_PYTHON",
                             "--time=10", f"--output={session / 'output.log'}", *native, str(script), check=False)
        assert submitted.returncode == 0, submitted.stderr
        job = submitted.stdout.strip().split(";")[0]
        connection, output = session / "connection.yml", session / "output.log"

        def queued() -> bool:
            return bool(nodes.run("squeue", "--noheader", f"--jobs={job}", check=False).stdout.strip())

        wait_until(lambda: connection.exists() or not queued(), "the job's lab to listen (connection.yml written)", LIMIT,
                   diagnose=lambda: output.read_text()[-3000:] if output.exists() else nodes.diagnose())
        assert connection.exists(), "the job ended before its lab listened:\n" + (output.read_text()[-3000:] if output.exists() else "")
        result = nodes.on(nodes.head, sys.executable, "-c", CLIENT, str(connection), json.dumps(CELLS),
                          check=False, timeout=2 * LIMIT)
        lab_host = yaml.safe_load(connection.read_text())["host"]
        if result.returncode != 0:  # what the client saw, what the lab said, whether the job runs, what listens
            raise AssertionError(
                f"client exited {result.returncode}:\n{result.stderr[-2000:]}\nthe job's output:\n"
                + (output.read_text()[-4000:] if output.exists() else "(none)")
                + "\nsqueue: " + nodes.run("squeue", "--noheader", f"--jobs={job}", check=False).stdout
                + f"\nlistening on {lab_host}:\n" + nodes.on(lab_host, "ss", "-ltnp", check=False).stdout)
        seen = client_json(result)
        assert seen["refused"] == 403, seen  # nothing without the password
        world, hang, stopped = seen["said"]
        assert "WORLD 2\n" in world, world + output.read_text()[-3000:]
        hosts = json.loads(world.split("HOSTS", 1)[1].strip().splitlines()[0])
        assert sorted(hosts.values()) == sorted(nodes.compute) and hosts["0"] == lab_host, (hosts, lab_host)
        # the rank blocked on the node the lab does not run on, named with its host
        line = next((text for text in hang.splitlines() if f"rank 1 on {hosts['1']}: blocked in MPI_" in text), "")
        assert "(source=0, tag=7" in line, hang  # (mpi4py's recv of an object probes first: MPI_Mprobe)
        assert "RESTARTED 2" in hang and "STOPPED" in stopped, (hang, stopped)
    finally:
        if job is not None:
            nodes.run("scancel", job, check=False)
            nodes.wait_for_no_jobs()
            # scancel's SIGTERM reaches the script and the lab; the script ends at once, and the
            # lab, no longer its child, is lost to the simulated nodes' proctrack/linuxproc (a
            # centre's proctrack/cgroup keeps it) while it shuts down, which under load takes
            # more than the teardown's grace: wait for it here, bounded (what is still running
            # then, the teardown kills and reports)
            # (this cluster's job only: every simulated cluster numbers its jobs from 1, and the
            # hub's test, run beside this one, had its job 1 hold this wait for its whole limit)
            with contextlib.suppress(AssertionError):
                wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={nodes.conf}"),
                           "the job's lab to end after scancel's SIGTERM", LIMIT)
        accounts.remove()
