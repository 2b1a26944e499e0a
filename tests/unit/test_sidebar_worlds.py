"""The lab's world sidebar reads every world from files alone (``mpiworkbench.sidebar.worlds``): fake
world directories in ``tmp_path``, ranks that are processes of this test (a live one, one ended),
a stop record as a rank's kernel writes it, the turn held by a real ``Turns`` client, and the
lab's map of external kernels."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from mpiworkbench.client.calls.clients import ClientInfo
from mpiworkbench.client.calls.trace import RANK_PROCESSES
from mpiworkbench.client.calls.turns import Turns
from mpiworkbench.client.cluster.record import world_directory, write_json_atomic
from mpiworkbench.core.processes import Identity
from mpiworkbench.sidebar import worlds
from mpiworkbench.trace import hang, stops

HERE = socket.gethostname()


@pytest.fixture
def ranks():
    """Two live processes standing in for ranks 0 and 1, and one that has ended (rank 2)."""
    live = [subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
            for _ in range(2)]
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    try:
        yield live, ended
    finally:
        for process in live:
            process.stdin.close()
            process.wait(timeout=30)


def make_world(ipython_dir, cluster_id: str, processes: dict[int, subprocess.Popen], profile: str = "default"):
    directory = world_directory(ipython_dir / f"profile_{profile}", cluster_id)
    directory.mkdir(parents=True)
    write_json_atomic(directory / "world.json", {"ranks": {str(10 + r): r for r in processes}, "generation": 1})
    records = {}
    for rank, process in processes.items():
        identity = Identity.of(process.pid)
        records[str(rank)] = {"pid": process.pid, "host": HERE,
                              "started": identity.started if identity else 1}  # ended: any start time
    write_json_atomic(directory / RANK_PROCESSES, records)
    return directory


@pytest.fixture
def stop_record():
    """Write a stop record for a pid as a rank's kernel does; removed afterwards."""
    written = []

    def write(pid: int, line: int) -> None:
        path = stops.stop_path(pid)
        with open(path, "w") as f:
            json.dump({"stopped_since": 5.0, "where": {"file": "/tmp/ipykernel_99/1234.py", "line": line,
                                                        "function": "<module>"}, "reason": "breakpoint", "pauses": []}, f)
        written.append(path)

    yield write
    for path in written:
        os.unlink(path)


def waiting_in(call: str, peer: int, seconds: float, pids: set[int]):
    """A stand-in for :func:`hang.read_slot`: the ranks *pids* inside *call*."""
    def read_slot(pid, since=None, state=None):
        if pid not in pids:
            return None
        return hang.InFlight(pid=pid, rank=0, size=2, calls=3, call=call, peer=peer, tag=0, bytes=8, seconds=seconds)
    return read_slot


def test_an_idle_world_a_stopped_rank_and_a_dead_one(tmp_path, ranks, stop_record):
    (r0, r1), ended = ranks
    make_world(tmp_path, "abc", {0: r0, 1: r1, 2: ended})
    stop_record(r1.pid, 4)
    kernel_file = tmp_path / "runtime" / "external_kernels" / "mpiworkbench-abc-g1-rank1.json"
    found = worlds.read_worlds(tmp_path, {"k-1": kernel_file, "k-other": tmp_path / "kernel-7.json"})
    assert len(found) == 1, found
    world = found[0]
    assert (world["cluster_id"], world["profile"]) == ("abc", "default")
    by_rank = {r["rank"]: r for r in world["ranks"]}
    assert by_rank[0] == {"rank": 0, "engine": 10, "host": HERE, "pid": r0.pid, "state": "idle", "where": "",
                          "kernel": None}
    assert (by_rank[1]["state"], by_rank[1]["where"], by_rank[1]["kernel"]) == ("stopped", "cell line 4", "k-1")
    assert by_rank[2]["state"] == "dead" and str(ended.pid) in by_rank[2]["where"]
    assert world["state"] == "debugging"
    assert world["groups"] == [
        {"state": "dead", "where": f"process {ended.pid} gone", "ranks": [2]},
        {"state": "stopped", "where": "cell line 4", "ranks": [1]},
        {"state": "idle", "where": "", "ranks": [0]},
    ]


def test_ranks_waiting_in_the_same_call_are_one_row_while_the_turn_says_who_runs_what(tmp_path, ranks, monkeypatch):
    (r0, r1), _ended = ranks
    directory = make_world(tmp_path, "w2", {0: r0, 1: r1}, profile="mpi")
    me = ClientInfo.here()
    me.notebook = "15_debugging_ranks.ipynb"
    turns = Turns(directory, me, say=lambda _line: None)
    try:
        turns.acquire("%%px cell", timeout=10)
        # both ranks in MPI_Recv from rank 0, for different times: one row
        monkeypatch.setattr(worlds.hang, "read_slot", waiting_in("MPI_Recv", 0, 12.34, {r0.pid, r1.pid}))
        world = worlds.read_worlds(tmp_path)[0]
        assert world["profile"] == "mpi" and world["state"] == "busy"
        assert world["notebooks"] == ["15_debugging_ranks.ipynb"]
        assert world["busy"] == "%%px cell (from 15_debugging_ranks.ipynb)"
        assert [r["where"] for r in world["ranks"]] == ["MPI_Recv(source=0, tag=0, 8 bytes) for 12.3 s"] * 2
        assert world["groups"] == [{"state": "waiting", "where": "MPI_Recv(source=0, tag=0, 8 bytes)", "ranks": [0, 1]}]

        # rank 1 left its call: busy in the notebook's cell, a row of its own
        monkeypatch.setattr(worlds.hang, "read_slot", waiting_in("MPI_Recv", 0, 12.34, {r0.pid}))
        world = worlds.read_worlds(tmp_path)[0]
        assert world["groups"][1] == {"state": "busy", "where": "%%px cell (from 15_debugging_ranks.ipynb)", "ranks": [1]}
    finally:
        turns.close()
    # the turn given back, the client gone: idle, no notebook
    monkeypatch.setattr(worlds.hang, "read_slot", waiting_in("MPI_Recv", 0, 1.0, set()))
    world = worlds.read_worlds(tmp_path)[0]
    assert (world["state"], world["notebooks"], world["busy"]) == ("idle", [], None)


def test_a_world_whose_ranks_are_not_known_yet_and_ranks_on_another_host(tmp_path, ranks):
    (r0, _r1), _ended = ranks
    starting = world_directory(tmp_path / "profile_default", "new")
    starting.mkdir(parents=True)
    other = make_world(tmp_path, "far", {0: r0})
    write_json_atomic(other / RANK_PROCESSES, {"0": {"pid": r0.pid, "host": "node7", "started": 1}})
    found = {w["cluster_id"]: w for w in worlds.read_worlds(tmp_path)}
    assert (found["new"]["state"], found["new"]["ranks"], found["new"]["groups"]) == ("starting", [], [])
    # a rank on another host: its files are not here; without the turn held it is idle
    assert found["far"]["ranks"][0]["state"] == "idle" and found["far"]["ranks"][0]["host"] == "node7"


def test_rank_kernels_are_read_from_the_connection_file_names():
    assert worlds.rank_kernels({"a": "/r/external_kernels/mpiworkbench-1700-abc-g3-rank12.json",
                                "b": "/r/external_kernels/kernel-1.json",
                                "c": "/r/mpiworkbench-x-g0-rank0.json"}) == {("1700-abc", 3, 12): "a", ("x", 0, 0): "c"}


def test_a_restarted_worlds_ranks_are_new_kernels(tmp_path, ranks):
    """The files of the generation before a restart are not the world's ranks' kernels."""
    (r0, r1), _ = ranks
    make_world(tmp_path, "abc", {0: r0, 1: r1})  # generation 1
    external = tmp_path / "runtime" / "external_kernels"
    files = {"old": external / "mpiworkbench-abc-g0-rank1.json", "new": external / "mpiworkbench-abc-g1-rank0.json"}
    (world,) = worlds.read_worlds(tmp_path, files)
    assert [r["kernel"] for r in world["ranks"]] == ["new", None]


def test_no_ipython_directory_no_worlds(tmp_path):
    assert worlds.read_worlds(tmp_path / "missing") == []
