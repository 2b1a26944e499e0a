"""A world lives as long as its user: nothing in its caller's environment, no stalled
controller and no killed client makes it die or leave something behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.errors import WorldInUse, WorldRestarted
from mpiworkbench.client.cluster.profiles import create_profile
from mpiworkbench.core import launch, processes
from tests.cluster.slurm import processes_with_env, wait_until
from tests.ipcluster import IPCluster
from tests.process_tree import leftover_world_files, world_files

pytestmark = pytest.mark.cost(115, (
                         "a controller stopped for 60 s (the engines' patience must outlast the stall), a "
                         "world outliving its caller's wall-clock limit, a start killed at three moments"))

#: Seconds a world must outlive the wall-clock limit its caller's environment asks for.
OUTLIVE_S = 20.0
#: The limit in the caller's environment (seconds).
INHERITED_LIMIT = "5"
#: Seconds the controller is stopped (SIGSTOP) while the world idles.
STALL_S = 60.0
#: Seconds after the start of `Workbench(n=2).start()` at which its process is killed.
KILL_MOMENTS = (0.1, 0.3, 0.6, 1.0, 2.0)
LIMIT = 120.0  # seconds; generous bounds on polled conditions


def _watch(worlds: dict[str, Workbench], seconds: float) -> None:
    """Look at every world twice a second for *seconds*: each must stay up throughout."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for name, bench in worlds.items():
            assert bench.state == "running", f"the {name} world is {bench.state} after " \
                f"{seconds - (until - time.monotonic()):.1f} s: {bench.how_it_ended()}"
        time.sleep(0.5)  # the interval between two looks; the test's length is what it measures


def test_a_world_outlives_the_wall_clock_limit_of_its_callers_environment(tmp_path, monkeypatch, request):
    """``MPIEXEC_TIMEOUT=5`` (and every other limit variable) in the environment of the
    notebook and of ``ipcluster``: the workbench's own world and the profile's are both alive
    and answering 20 s later."""
    ipython_dir = tmp_path / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
    for name in launch.LIMIT_VARIABLES:
        monkeypatch.setenv(name, INHERITED_LIMIT)
    ipcluster = IPCluster("mpi", ipython_dir, tmp_path, dict(os.environ))
    ipcluster.env["MPIEXEC_TIMEOUT"] = INHERITED_LIMIT
    request.addfinalizer(ipcluster.stop)
    ipcluster.start(2).close()
    own = Workbench(n=2, timeout=60, activate=False)
    request.addfinalizer(own.stop)
    own.start()
    attached = Workbench.attach("mpi", timeout=60, activate=False)
    request.addfinalizer(attached.stop)
    before = {"own": own.run(os.getpid), "ipcluster's": attached.run(os.getpid)}
    _watch({"own": own, "ipcluster's": attached}, OUTLIVE_S)
    assert {"own": own.run(os.getpid), "ipcluster's": attached.run(os.getpid)} == before


def test_a_stalled_controller_leaves_the_idle_world_alive(fresh_wb):
    """The controller (all its processes) stopped for 60 s, then continued: the same ranks
    answer, none unregistered (the engines' patience, ENGINE_PATIENCE_S, outlasts the stall)."""
    before = fresh_wb.run(os.getpid)
    root = fresh_wb.cluster.controller.process.pid
    controller = [processes.Identity.of(pid) for pid in (root, *processes.descendants(root))]
    for who in controller:
        processes.send(who, signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        while time.monotonic() - stopped < STALL_S:
            assert all(processes.alive(pid) for pid in before), "a rank exited while the controller was stopped"
            time.sleep(1.0)  # the interval between two looks; the stall's length is what it tests
    finally:
        for who in controller:
            processes.send(who, signal.SIGCONT)
    assert fresh_wb.run(os.getpid) == before
    assert fresh_wb.state == "running"


START = """
import sys
from mpiworkbench import Workbench
wb = Workbench(n=2, activate=False)
print("starting", flush=True)
wb.start()
print("started", flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("moment", KILL_MOMENTS)
def test_a_client_killed_during_a_start_leaves_nothing(tmp_path, moment):
    """``kill -9`` of the notebook's process *moment* seconds into ``Workbench(n=2).start()``:
    no controller, engine or mpiexec is left running, and no /dev/shm file, connection file,
    cluster file, engine state file or world directory is left behind."""
    ipython_dir = tmp_path / "ipython"
    shm_before = world_files()
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir)}
    client = subprocess.Popen([sys.executable, "-c", START], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline().strip() == "starting"
        time.sleep(moment)  # the moment of the start at which the kernel dies: the test's parameter
        client.kill()
        client.wait(timeout=LIMIT)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    mine = f"IPYTHONDIR={ipython_dir}"
    wait_until(lambda: not processes_with_env(mine), "the cluster's processes to be ended by the watchdog",
               LIMIT, diagnose=lambda: "\n".join(map(processes.cmdline, processes_with_env(mine))))
    profile = ipython_dir / "profile_default"
    security = sorted(p.name for p in (profile / "security").glob("*")) if (profile / "security").exists() else []
    assert not security, f"left in {profile / 'security'}: {security}"
    assert not list((profile / "log").glob("engines*.json")), "the hub's engine state file was left"
    assert not leftover_world_files(shm_before)


def test_a_notebook_attached_to_a_workbenchs_world_restarts_it_for_everyone(fresh_wb):
    """A second notebook attached to a world that ``Workbench(n=2)`` started restarts it while
    the first calls it in a loop: the new ranks start as the workbench's own do (its mpiexec,
    the interposer preloaded), every call of the first either answers or says the world was
    restarted (never that it died), the first's world reads running again, and its stop ends
    every process of the world, the new engines included."""
    owner = fresh_wb
    other = Workbench.attach(profile="default", cluster_id=owner.cluster_id, activate=False, timeout=60)
    outcomes: list[str] = []
    done = threading.Event()

    def calls() -> None:
        while not done.is_set():
            try:
                owner.run(os.getpid)
                outcomes.append("answered")
            except WorldRestarted:
                outcomes.append("told")
            except Exception as exc:  # noqa: BLE001 - what the test reports
                outcomes.append(f"{type(exc).__name__}: {exc}")

    caller = threading.Thread(target=calls)
    caller.start()
    try:
        wait_until(lambda: "answered" in outcomes, "the first notebook's calls to run", LIMIT)
        deadline = time.monotonic() + LIMIT
        while True:  # a polite restart waits for a moment between the other's calls
            try:
                other.restart()
                break
            except WorldInUse:
                assert time.monotonic() < deadline, "the restart never found the world free"
        wait_until(lambda: outcomes[-3:] == ["answered"] * 3 and "told" in outcomes,
                   "the first notebook to follow the restart", LIMIT, diagnose=lambda: str(outcomes[-5:]))
    finally:
        done.set()
        caller.join(LIMIT)
        other.stop()
    assert [o for o in outcomes if o not in ("answered", "told")] == []
    assert owner.state == "running"
    preload = owner.run(os.getenv, "LD_PRELOAD")
    assert all(value and "mpiworkbench" in value for value in preload), preload
    mine = f"IPP_CLUSTER_ID={owner.cluster_id}"
    owner.stop()
    wait_until(lambda: not processes_with_env(mine), "every process of the world to end", LIMIT,
               diagnose=lambda: "\n".join(map(processes.cmdline, processes_with_env(mine))))
