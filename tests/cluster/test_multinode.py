"""MPI and the workbench across simulated nodes: a head and two compute nodes, each a set of
Linux namespaces with its own address, hostname and /dev/shm, and a private Slurm across them
(``tests/multinode.py``, fixture ``multinode``).

1. Slurm places one task on each node.
2. An MPI job spans both nodes, started by MPICH's Hydra inside an ``sbatch`` allocation or by
   ``srun --mpi=pmi2``; its ranks see different hostnames and a correct Allreduce.
3. ``mpiworkbench profile``'s ``slurm`` launcher with ``--ip`` on head's address (traffic signed
   and encrypted): ``ipcluster start`` on head submits the engines as one job spread over both
   nodes, and a workbench attached from head sees both hosts, solves a 33³ wave equal to a serial
   solve, traces across the nodes (no receive before its send), measures a speedup point packed
   on one node and spread over both, names a rank blocked in ``MPI_Recv`` on the other node in
   its hang report (with the trace up to the timeout, from both nodes), and restarts the world.
4. Faults: an engine killed, the engines' job cancelled, the second node's link taken down
   during a call (the timeout names that node's ranks as cut off); each time ``wb.restart()``
   gives a working world again.

Every client command runs inside head (``nsenter``): the cluster's addresses exist only there.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from tests.cluster.slurm import processes_with_env, wait_until
from tests.multinode import HeadIPCluster, _path, client_json, multinode, three_nodes  # noqa: F401 - fixtures

#: A hung MPI job or client fails its test instead of the run (teardown still cleans up).
pytestmark = [pytest.mark.timeout(600),
              pytest.mark.cost(90, (
                               "simulated nodes and a Slurm job of engines across them, attached to, traced, "
                               "restarted"))]

#: Generous bound (seconds) on one job or one client; conditions are polled, never slept on.
LIMIT = 120
#: Wall-clock limit of every job (minutes) and of every mpiexec (seconds).
JOB_MINUTES = "5"
MPIEXEC_TIMEOUT = "240"

PYTHON = sys.executable
MPIEXEC = str(Path(PYTHON).with_name("mpiexec"))

#: Run on every rank with ``python -m mpi4py`` (an exception aborts the whole job). Rank 0
#: writes what the ranks saw to argv[1] as JSON.
MPI_PROGRAM = """\
import json
import socket
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
total = comm.allreduce(comm.rank + 1)
# a buffer large enough to go through the network transport in pieces, not one eager message
data = np.full(1 << 18, comm.rank + 1.0)
summed = np.empty_like(data)
comm.Allreduce(data, summed, op=MPI.SUM)
hosts = comm.gather(socket.gethostname())
names = comm.gather(MPI.Get_processor_name())
if comm.rank == 0:
    with open(sys.argv[1], "w") as out:
        json.dump({"size": comm.size, "total": total, "hosts": hosts, "processor_names": names,
                   "buffer_ok": bool(np.all(summed == comm.size * (comm.size + 1) / 2))}, out)
"""

#: The workbench's client, run on head: waits for the engines, attaches to the profile's
#: cluster, and prints one JSON line with the rank map, every rank's ``rank_info`` and an
#: allreduce across the world.
WORKBENCH_CLIENT = """\
import json
import sys

import ipyparallel as ipp

from mpiworkbench import ExecutionTimeout, Workbench
from mpiworkbench.client.cluster import engines
from mpiworkbench.core.machine import rank_info
from mpiworkbench.trace.events import kind_name

profile, n, connection = sys.argv[1], int(sys.argv[2]), sys.argv[3]


@ipp.interactive
def allreduce_ranks():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    return comm.allreduce(comm.rank + 1, op=MPI.SUM)


@ipp.interactive
def pingpong_ranks():
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    buf = np.zeros(1024)
    for _ in range(5):  # rank 0 with the last rank: across the nodes
        if comm.rank == 0:
            comm.Send(buf, dest=comm.size - 1, tag=3)
            comm.Recv(buf, source=comm.size - 1, tag=4)
        elif comm.rank == comm.size - 1:
            comm.Recv(buf, source=0, tag=3)
            comm.Send(buf, dest=0, tag=4)


# the engines of a batch job register some time after ipcluster recorded the job
waiting = ipp.Client(connection)
try:
    engines.wait_registered(waiting, n, 90)
finally:
    waiting.close()
wb = Workbench.attach(profile=profile, activate=False, timeout=60)
report = {}
try:
    report["n"] = wb.n
    report["launcher"] = wb.launcher
    report["ranks"] = {str(engine): rank for engine, rank in wb.ranks.items()}
    report["info"] = wb.run(rank_info)
    report["allreduce"] = wb.run(allreduce_ranks)

    # a distributed 33^3 wave solve against the same solve in this process
    import numpy as np
    from mpiworkbench.solvers.wave.solver import WaveSolver

    w = wb.wave(mesh=33)
    try:
        w.step(20)
        serial = WaveSolver(33, kernel="numpy")
        try:
            serial.step(20)
            report["wave_difference"] = float(np.max(np.abs(w.field() - serial.gather())))
        finally:
            serial.close()
    finally:
        w.close()

    # a trace across both nodes: their clocks offset by a measured estimate
    with wb.trace() as t:
        wb.run(pingpong_ranks)
    messages = t.trace.messages()
    report["trace"] = {"hosts": t.trace.hosts, "offsets": len(t.trace.estimated_offsets),
                       "messages": len(messages),
                       "receive_before_send": int(np.sum(messages["t_recv"] < messages["t_send"]))}

    # a point of 2 ranks on one node (packed) and on both (spread)
    from mpiworkbench.drivers.speedup import run_on_workbench
    from mpiworkbench.speedup import SpeedupSpec
    from mpiworkbench.speedup.analysis import nodes

    placed = run_on_workbench(wb, SpeedupSpec("inner", nranks=[2], sizes=[4096], variants=["c"], repeats=1,
                                              params={"loops": 2}, placements=["packed", "spread"]))
    report["placements"] = {p["place"]: {"nodes": nodes(p), "ok": p["verify"]["ok"],
                                         "active": {h: v["active_ranks"] for h, v in p["placement"]["hosts"].items()}}
                            for p in placed.points}

    # the last rank, on the second node, waits for a message nobody sends (traced: the trace up
    # to the timeout is read from what the ranks on the other hosts published)
    wb.timeout = 6.0
    last = wb.n - 1
    try:
        with wb.trace():
            wb.execute(chr(10).join([
                "import numpy as np",
                "from mpi4py import MPI",
                f"if MPI.COMM_WORLD.rank == {last}:",
                "    MPI.COMM_WORLD.Recv(np.empty(4), source=0, tag=77)"]))
    except ExecutionTimeout as exc:
        state = next(r for r in exc.ranks if r.rank == last)
        report["hang"] = {"running": exc.running, "call": state.inflight and state.inflight.call,
                          "peer": state.inflight and state.inflight.peer,
                          "tag": state.inflight and state.inflight.tag, "line": state.line,
                          "text": str(exc)}
        if exc.trace is not None:
            report["hang"]["trace"] = {
                "hosts": exc.trace.hosts,
                "unfinished": [[int(exc.trace.events[i]["rank"]), kind_name(int(exc.trace.events[i]["kind"]))]
                               for i in exc.trace.unfinished]}
    wb.timeout = 60.0
    wb.restart()

    # the same through a relayed call (wb.run, %%px: rank 0 hands it to the others): the report
    # of the rank on the second node reaches the notebook through what it publishes
    @ipp.interactive
    def receive_on_last():
        import numpy as np
        from mpi4py import MPI

        if MPI.COMM_WORLD.rank == MPI.COMM_WORLD.size - 1:
            MPI.COMM_WORLD.Recv(np.empty(4), source=0, tag=78)

    wb.timeout = 6.0
    try:
        wb.run(receive_on_last)
    except ExecutionTimeout as exc:
        state = next(r for r in exc.ranks if r.rank == last)
        report["relayed_hang"] = {"call": state.inflight and state.inflight.call, "host": state.host,
                                  "peer": state.inflight and state.inflight.peer,
                                  "tag": state.inflight and state.inflight.tag, "text": str(exc)}
    wb.timeout = 60.0
    wb.restart()
    report["after_restart"] = {"hosts": sorted(wb.hosts.values()), "allreduce": wb.run(allreduce_ranks)}

    # faults: an engine on the second node killed, then the engines' job cancelled; each time the
    # workbench says which ranks are gone and where, and a restart gives a working world again
    import subprocess
    import time

    def dead_world(what, placement):
        deadline = time.monotonic() + 120
        while wb.state != "dead":
            if time.monotonic() > deadline:
                raise AssertionError(f"the workbench did not see the world die after {what}")
            time.sleep(0.1)
        try:
            wb.run(allreduce_ranks)
        except RuntimeError as exc:
            said = str(exc)
        else:
            said = "(no error)"
        wb.restart()
        return {"said": said, "allreduce": wb.run(allreduce_ranks), "hosts": sorted(wb.hosts.values()),
                "placement": {str(rank): host for rank, host in placement.items()}}

    victim = next(engine for engine, rank in wb.ranks.items() if rank == wb.n - 1)
    placement = dict(wb.hosts)
    wb.client.send_signal("SIGKILL", targets=[victim], block=True)
    report["engine_killed"] = dead_world("SIGKILL to an engine", placement)
    # the test's private Slurm runs only this cluster's engines' job
    jobs = subprocess.run(["squeue", "--noheader", "--format=%i"], capture_output=True,
                          text=True, check=True).stdout.split()
    placement = dict(wb.hosts)
    subprocess.run(["scancel", *jobs], check=True)
    report["job_cancelled"] = dead_world("scancel of the engines' job", placement)

    # the second node's link goes down while a call runs: the call times out naming the ranks
    # there and their host; with the link back, a restart gives a working world
    link_down, link_up = json.loads(sys.argv[4]), json.loads(sys.argv[5])
    wb.timeout = 8.0
    placement = dict(wb.hosts)
    subprocess.run(link_down, check=True)
    try:
        try:
            wb.run(allreduce_ranks)
        except (ExecutionTimeout, RuntimeError) as exc:
            said = f"{type(exc).__name__}: {exc}"
        else:
            said = "(no error)"
    finally:
        subprocess.run(link_up, check=True)
    wb.timeout = 60.0
    wb.restart()
    report["link_down"] = {"said": said, "allreduce": wb.run(allreduce_ranks), "hosts": sorted(wb.hosts.values()),
                           "placement": {str(rank): host for rank, host in placement.items()}}
finally:
    report["stop"] = wb.stop()
print(json.dumps(report), flush=True)
"""


def _job_processes_end(nodes, job: str) -> None:
    """Wait (bounded) until no process of *job* runs on any node."""
    wait_until(lambda: not processes_with_env(f"SLURM_JOB_ID={job}", f"SLURM_CONF={nodes.conf}"),
               f"the processes of job {job} to end", LIMIT)


def _job_pid(pid: int) -> bool:
    """Whether *pid* belongs to a Slurm job (its environment has ``SLURM_JOB_ID``)."""
    try:
        return b"SLURM_JOB_ID=" in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def test_every_node_has_its_own_name_address_and_shared_memory(multinode):
    own_shm = os.stat("/dev/shm").st_dev
    seen = {}
    for node in multinode.hosts:
        hostname = multinode.on(node, "hostname").stdout.strip()
        addresses = multinode.on(node, "ip", "-4", "-o", "addr", "show").stdout
        # /sys shows the node's own interfaces (what UCX and hwloc look at)
        interfaces = multinode.on(node, "ls", "/sys/class/net").stdout.split()
        shm = multinode.on(node, "stat", "-c", "%d", "/dev/shm").stdout.strip()
        seen[node] = (hostname, interfaces, shm)
        assert hostname == node, seen
        assert f" {multinode.hosts[node]}/24 " in addresses, addresses
        assert ("br0" if node == multinode.head else "eth0") in interfaces, seen
        assert int(shm) != own_shm, f"{node} must have a /dev/shm of its own: {seen}"
        for other, addr in multinode.hosts.items():  # every node knows every other by name
            assert multinode.on(node, "getent", "hosts", other).stdout.split()[0] == addr
    assert len({shm for _, _, shm in seen.values()}) == len(multinode.hosts), seen


def test_srun_places_one_task_on_each_node(multinode):
    result = multinode.run("srun", "-N2", "-n2", "--time=1", "hostname", timeout=LIMIT)
    assert sorted(result.stdout.split()) == multinode.compute, result.stdout + result.stderr
    multinode.wait_for_no_jobs()


@pytest.mark.parametrize("starter,ranks", [("mpiexec", 2), ("mpiexec", 4), ("srun", 4)])
def test_mpi_world_spans_both_nodes(multinode, tmp_path, starter, ranks):
    program = tmp_path / "world.py"
    program.write_text(MPI_PROGRAM)
    facts = tmp_path / "world.json"
    out = tmp_path / "job.out"
    run = f"{shlex.quote(PYTHON)} -m mpi4py {shlex.quote(str(program))} {shlex.quote(str(facts))}"
    per_node = ranks // len(multinode.compute)
    if starter == "mpiexec":
        # Hydra inside the allocation: it reads the node list and starts its proxies with srun
        script = tmp_path / "world.sbatch"
        script.write_text(
            "#!/bin/sh\n"
            "#SBATCH --job-name=mpiwb-multinode\n"
            f"#SBATCH --nodes={len(multinode.compute)}\n"
            f"#SBATCH --ntasks={ranks}\n"
            f"#SBATCH --ntasks-per-node={per_node}\n"
            f"#SBATCH --time={JOB_MINUTES}\n"
            f"#SBATCH --output={out}\n"
            f"export MPIEXEC_TIMEOUT={MPIEXEC_TIMEOUT}\n"
            f"exec {shlex.quote(MPIEXEC)} -n {ranks} {run}\n")
        job = multinode.run("sbatch", "--parsable", str(script), cwd=tmp_path).stdout.strip().split(";")[0]
        try:
            state = multinode.wait_job(job, LIMIT, output=out)
        finally:
            if multinode.job_state(job) not in ("COMPLETED", "GONE"):
                multinode.run("scancel", job, check=False)
        log = out.read_text(errors="replace") if out.exists() else "(no job output)"
        assert state in ("COMPLETED", "GONE"), f"job {job} ended {state}\n{log}\n{multinode.diagnose()}"
    else:
        # Slurm's own PMI-2 server, which the mpich wheel's library speaks
        result = multinode.run("srun", "--mpi=pmi2", f"--nodes={len(multinode.compute)}", f"--ntasks={ranks}",
                               f"--ntasks-per-node={per_node}", f"--time={JOB_MINUTES}", *shlex.split(run),
                               cwd=tmp_path, check=False, timeout=LIMIT)
        log = result.stdout + result.stderr
        assert result.returncode == 0, f"srun exited {result.returncode}\n{log}\n{multinode.diagnose()}"
    world = json.loads(facts.read_text())
    assert world["size"] == ranks, log
    assert world["total"] == ranks * (ranks + 1) // 2, world
    assert world["buffer_ok"], world
    assert sorted(world["hosts"]) == sorted(multinode.compute * per_node), f"ranks per node: {world}"
    assert sorted(world["processor_names"]) == sorted(world["hosts"]), world
    multinode.wait_for_no_jobs()
    wait_until(lambda: not [p for p in processes_with_env(f"SLURM_CONF={multinode.conf}") if _job_pid(p)],
               "the MPI job's processes to end", LIMIT)


def test_a_world_of_three_ranks_on_three_nodes(three_nodes, tmp_path):
    # one rank per node (one Slurm CPU each): every message of the world crosses the network
    program = tmp_path / "world.py"
    program.write_text(MPI_PROGRAM)
    facts = tmp_path / "world.json"
    result = three_nodes.run("srun", "--mpi=pmi2", "--nodes=3", "--ntasks=3", f"--time={JOB_MINUTES}",
                             PYTHON, "-m", "mpi4py", str(program), str(facts),
                             cwd=tmp_path, check=False, timeout=LIMIT)
    assert result.returncode == 0, f"srun exited {result.returncode}\n{result.stdout}{result.stderr}\n{three_nodes.diagnose()}"
    world = json.loads(facts.read_text())
    assert world["size"] == 3 and world["total"] == 6 and world["buffer_ok"], world
    assert sorted(world["hosts"]) == three_nodes.compute == ["node1", "node2", "node3"], world
    three_nodes.wait_for_no_jobs()


#: Rank 0 (first node) sends to rank 1 (second node) LATE_S after the receive is posted, traced
#: with the lines; rank 0 writes the Late Sender the wait states attribute and the lateness
#: measured beside the trace (the nodes share the kernel's monotonic clock) to argv[1].
LATE_SEND_PROGRAM = """\
import json
import sys
import time

import numpy as np
from mpi4py import MPI

from mpiworkbench.trace import recorder

LATE_S = 0.2
comm = MPI.COMM_WORLD
buf = np.zeros(8)
began = {}


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def body():
    comm.Barrier()
    if comm.rank == 0:
        time.sleep(LATE_S)
        began["send"] = now()
        comm.Send(buf, dest=1, tag=5)  # the late send
    else:
        began["receive"] = now()
        comm.Recv(buf, source=0, tag=5)
    comm.Barrier()


_, trace = recorder.trace_call(comm, body, capacity=1000, lines=True)
times = {k: v for part in comm.allgather(began) for k, v in part.items()}
if comm.rank == 0:
    waits = trace.wait_states()
    late = waits.of("Late Sender", rank=1)
    biggest = late[np.argmax(late["seconds"])] if len(late) else None
    send_line = next(i for i, line in enumerate(open(__file__), 1) if "# the late send" in line)
    with open(sys.argv[1], "w") as out:
        json.dump({"hosts": trace.hosts, "lateness": times["send"] - times["receive"],
                   "late_sender": float(late["seconds"].sum()), "causes": sorted(set(late["cause_rank"].tolist())),
                   "cause_site": None if biggest is None else waits.site(int(biggest["cause_site"])),
                   "send_site": f"{__file__}:{send_line} in body", "text": waits.text()}, out)
"""


def test_a_late_send_across_the_nodes_is_late_sender_of_the_receiver(multinode, tmp_path):
    # the "on the simulated nodes for one case": the trace's clocks corrected across two
    # hosts, the wait attributed as on one host (tests/mpi/test_wait_states.py's tolerance)
    from mpiworkbench.trace.library import build

    program = tmp_path / "late_send.py"
    program.write_text(LATE_SEND_PROGRAM)
    facts = tmp_path / "late_send.json"
    result = multinode.run("srun", "--mpi=pmi2", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                           f"--time={JOB_MINUTES}", f"--export=ALL,LD_PRELOAD={build()}",
                           PYTHON, "-m", "mpi4py", str(program), str(facts),
                           cwd=tmp_path, check=False, timeout=LIMIT)
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"srun exited {result.returncode}\n{log}\n{multinode.diagnose()}"
    seen = json.loads(facts.read_text())
    assert sorted(seen["hosts"]) == multinode.compute, seen
    lateness = seen["lateness"]
    assert lateness > 0.1, seen  # the injected 0.2 s, less how much later rank 0 left the Barrier
    assert seen["late_sender"] == pytest.approx(lateness, abs=max(0.1 * lateness, 0.002)), seen["text"]
    assert seen["causes"] == [0] and seen["cause_site"] == seen["send_site"], seen
    multinode.wait_for_no_jobs()


def test_workbench_attaches_to_engines_on_both_nodes(multinode, tmp_path):
    from mpiworkbench.client.cluster.profiles import create_profile

    ranks = 4
    ipython_dir = tmp_path / "ipython"
    name = f"multinode-{uuid.uuid4().hex[:8]}"
    create_profile(name, launcher="slurm", ip=multinode.head_addr, ipython_dir_=ipython_dir)
    env = {**multinode.env, "IPYTHONDIR": str(ipython_dir), "MPIEXEC_TIMEOUT": MPIEXEC_TIMEOUT,
           "SBATCH_TIMELIMIT": JOB_MINUTES}  # sbatch's --time, from the environment
    ipcluster = HeadIPCluster(multinode, name, ipython_dir, tmp_path, env)
    jobs: list[str] = []
    try:
        ipcluster.start(ranks, LIMIT)
        jobs = multinode.jobs()
        assert len(jobs) == 1, f"one batch job holds all engines; squeue has {jobs}"
        connection = ipcluster.profile_dir / "security" / "ipcontroller-client.json"
        # the second node's link, from inside its network namespace (the client runs them)
        link = [shutil.which("nsenter"), "-t", str(multinode.holders[multinode.compute[-1]].pid), "-n",
                shutil.which("ip", path=_path()) or "ip", "link", "set", "eth0"]
        client = multinode.on(multinode.head, PYTHON, "-c", WORKBENCH_CLIENT, name, str(ranks), str(connection),
                              json.dumps([*link, "down"]), json.dumps([*link, "up"]),
                              env=env, cwd=tmp_path, check=False, timeout=3 * LIMIT)
        report = client_json(client)
        assert report["n"] == ranks and report["launcher"] == "slurm", report
        assert sorted(report["ranks"].values()) == list(range(ranks)), report
        info = report["info"]
        assert [entry["rank"] for entry in info] == list(range(ranks)), info
        assert {entry["size"] for entry in info} == {ranks}, info
        hosts = [entry["host"] for entry in info]
        assert sorted(hosts) == sorted(multinode.compute * (ranks // len(multinode.compute))), \
            f"engines on both nodes, two on each: {hosts}"
        assert report["allreduce"] == [ranks * (ranks + 1) // 2] * ranks, report
        assert report["wave_difference"] < 1e-12, report
        trace = report["trace"]
        assert sorted(set(trace["hosts"])) == multinode.compute and trace["offsets"] == ranks, trace
        assert trace["messages"] >= 10 and trace["receive_before_send"] == 0, trace
        hang = report.get("hang")
        assert hang is not None, "the blocked receive did not time out"
        assert hang["running"] == [ranks - 1], hang
        assert (hang["call"], hang["peer"], hang["tag"]) == ("MPI_Recv", 0, 77), hang["text"]
        assert hang["line"] and hang["line"].split(" in ")[0].endswith(":4"), hang["text"]
        assert f"rank {ranks - 1}" in hang["text"] and "MPI_Recv" in hang["text"], hang["text"]
        relayed = report.get("relayed_hang")
        assert relayed is not None, "the relayed blocked receive did not time out"
        assert (relayed["call"], relayed["peer"], relayed["tag"]) == ("MPI_Recv", 0, 78), relayed["text"]
        assert relayed["host"] == multinode.compute[-1], relayed["text"]
        again = report["after_restart"]
        assert again["allreduce"] == [ranks * (ranks + 1) // 2] * ranks, again
        assert again["hosts"] == sorted(multinode.compute * (ranks // len(multinode.compute))), again
        for fault in ("engine_killed", "job_cancelled"):
            seen = report[fault]
            assert "MPI world has died" in seen["said"] and "wb.restart()" in seen["said"], seen
            # the ranks unregister in no fixed order once mpiexec has ended the job: whichever
            # are gone when the call comes are named, each with its host
            named = re.findall(r"rank (\d+) \(on (node\d)\)", seen["said"])
            assert named and all(host == seen["placement"][rank] for rank, host in named), seen
            assert seen["allreduce"] == [ranks * (ranks + 1) // 2] * ranks, (fault, seen)
            assert seen["hosts"] == again["hosts"], (fault, seen)
        placements = report["placements"]
        assert placements["packed"]["nodes"] == 1 and placements["spread"]["nodes"] == 2, placements
        assert placements["packed"]["ok"] and placements["spread"]["ok"], placements
        assert hang.get("trace"), f"a trace up to the timeout, from both nodes: {hang}"
        assert sorted(set(hang["trace"]["hosts"])) == multinode.compute, hang["trace"]
        assert [ranks - 1, "MPI_Recv"] in hang["trace"]["unfinished"], hang["trace"]
        down = report["link_down"]
        assert down["said"].startswith("ExecutionTimeout"), down
        remote = multinode.compute[-1]
        cut_off = sorted(rank for rank, host in down["placement"].items() if host == remote)
        assert f"nothing came back from {remote} (ranks {', '.join(cut_off)})" in down["said"], down["said"]
        assert down["allreduce"] == [ranks * (ranks + 1) // 2] * ranks, down
        assert down["hosts"] == again["hosts"], down
        assert "detached" in report["stop"], report
        # the restart replaced the engines' job (the old one leaves the queue once it has ended)
        wait_until(lambda: len(multinode.jobs()) == 1, "one engines' job after the restart", LIMIT)
        jobs = multinode.jobs()
    finally:
        left = ipcluster.stop(LIMIT)
        multinode.wait_for_no_jobs()
        for job in jobs:
            _job_processes_end(multinode, job)
    assert not left, f"ipcluster stop left processes running (killed now): {left}"
    assert not multinode.jobs()

