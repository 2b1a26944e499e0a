"""Reading the Slurm allocation a kernel runs in (``mpiworkbench.client.cluster.allocation``) from its
environment; the world inside a real job is ``tests/cluster/test_allocation.py``."""

from __future__ import annotations

import pytest

from mpiworkbench.client.cluster import allocation
from mpiworkbench.core import addresses

BATCH = {"SLURM_JOB_ID": "41", "SLURM_NTASKS": "3", "SLURM_JOB_NUM_NODES": "2",
         "SLURM_TASKS_PER_NODE": "2,1", "SLURM_JOB_NODELIST": "node[1-2]"}


@pytest.mark.parametrize("text,counts", [("3", [3]), ("2(x3),1", [2, 2, 2, 1]), ("1(x2)", [1, 1]), ("", [])])
def test_tasks_per_node_reads_slurms_compressed_form(text, counts):
    assert allocation.tasks_per_node(text) == counts


def test_tasks_per_node_refuses_what_it_cannot_read():
    with pytest.raises(ValueError, match="SLURM_TASKS_PER_NODE='2x3'"):
        allocation.tasks_per_node("2x3")


def test_the_batch_step_is_inside_the_allocation():
    job = allocation.current(BATCH)
    assert job == allocation.Allocation("41", 3, 2, "node[1-2]")
    assert allocation.world_size(None, job) == 3
    assert allocation.world_size(2, job) == 2  # asked for: fewer ranks than tasks is allowed


def test_without_ntasks_the_tasks_per_node_count():
    env = {k: v for k, v in BATCH.items() if k not in ("SLURM_NTASKS", "SLURM_JOB_NUM_NODES")}
    assert allocation.current({**env, "SLURM_TASKS_PER_NODE": "2(x2)"}) == allocation.Allocation("41", 4, 2, "node[1-2]")


def test_outside_a_job_and_inside_a_step_there_is_no_allocation(monkeypatch):
    assert allocation.current({}) is None
    assert allocation.current({**BATCH, "SLURM_STEP_ID": "0"}) is None  # srun python ...: the step's share only
    assert allocation.current({**BATCH, "SLURM_STEP_ID": "batch"}) is not None
    for name in ("SLURM_JOB_ID", "SLURM_JOBID"):
        monkeypatch.delenv(name, raising=False)
    assert allocation.world_size(None) == allocation.DEFAULT_RANKS


def test_more_ranks_than_tasks_are_refused_with_the_job_named():
    with pytest.raises(ValueError, match=r"n=4 ranks exceeds the 3 task\(s\) of Slurm job 41 .*--ntasks=4"):
        allocation.check_size(4, allocation.current(BATCH))
    allocation.check_size(3, allocation.current(BATCH))


def test_the_controller_stays_on_loopback_unless_the_job_spans_nodes():
    one_node = allocation.current({**BATCH, "SLURM_JOB_NUM_NODES": "1"})
    assert allocation.controller_address("127.0.0.1", None) == "127.0.0.1"
    assert allocation.controller_address("127.0.0.1", one_node) == "127.0.0.1"
    assert allocation.controller_address("10.0.0.5", allocation.current(BATCH)) == "10.0.0.5"  # asked for


def test_across_nodes_the_controller_listens_on_the_hosts_address(monkeypatch):
    monkeypatch.setattr(allocation.socket, "gethostname", lambda: "node1")
    monkeypatch.setattr(allocation.socket, "gethostbyname", {"node1": "10.201.7.11"}.__getitem__)
    assert allocation.controller_address("127.0.0.1", allocation.current(BATCH)) == "10.201.7.11"


def test_a_hostname_on_loopback_is_refused_saying_what_to_pass(monkeypatch):
    monkeypatch.setattr(allocation.socket, "gethostname", lambda: "node1")
    monkeypatch.setattr(allocation.socket, "gethostbyname", lambda host: "127.0.1.1")
    with pytest.raises(RuntimeError, match="resolves to the loopback address 127.0.1.1; pass controller_ip="):
        allocation.controller_address("127.0.0.1", allocation.current(BATCH))


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:5555", "tcp://localhost:1", "tcp://[::1]:2", "tcp://127.0.1.1:3"])
def test_a_loopback_url_is_reached_from_loopback(url):
    # (a relay or a rank's kernel then listens on loopback only: nothing beyond this host)
    assert addresses.own_address(url) == "127.0.0.1"
