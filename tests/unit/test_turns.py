"""The world's turn (``mpiworkbench.client.calls.turns``) without a cluster: clients are ``Turns``
objects on one directory — in this process (``flock`` locks belong to each open file, so two
objects exclude each other like two kernels) or in child processes we kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from mpiworkbench.client.calls import turns as world_module
from mpiworkbench.client.errors import WorldBlocked, WorldBusy
from mpiworkbench.client.calls.clients import ClientInfo
from mpiworkbench.client.calls.turns import Turns
from mpiworkbench.client.cluster.record import world_directory

LIMIT = 60.0  # seconds; generous bounds on awaited conditions


def client(directory, name: str) -> Turns:
    me = ClientInfo.here()
    me.notebook = name
    return Turns(directory, me, say=lambda _line: None)


def wait_until(condition, what: str, limit: float = LIMIT) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture
def directory(tmp_path):
    return world_directory(tmp_path / "profile_mpi", "")


def test_one_client_at_a_time_and_the_waiter_is_told_whom_it_waits_for(directory):
    a, b = client(directory, "03_wave.ipynb"), client(directory, "05_speedup.ipynb")
    a.acquire("wave Play", timeout=None)
    assert b.holder()["notebook"] == "03_wave.ipynb" and b.holder()["label"] == "wave Play"
    with pytest.raises(WorldBusy, match=r"03_wave.ipynb \(pid \d+\) runs wave Play"):
        b.acquire("%%px: comm.allreduce", timeout=0.2)
    assert b.waiting() == [], "a call that gave up leaves the queue"
    a.release()
    assert b.holder() is None
    b.acquire("%%px", timeout=1)
    assert a.holder()["notebook"] == "05_speedup.ipynb"
    b.release()


def test_a_client_never_waits_for_its_own_work(directory):
    a, b = client(directory, "a"), client(directory, "b")
    a.acquire("first", timeout=0.1)
    a.acquire("second", timeout=0.1)  # joins: one ipyparallel client reaches every rank in order
    a.release()
    assert a.holding and b.holder() is not None, "held while any execution of ours runs"
    a.release()
    assert not a.holding and b.holder() is None


def test_the_oldest_waiter_goes_next_so_a_busy_loop_cannot_starve_a_cell(directory):
    player, cell = client(directory, "play"), client(directory, "cell")
    order: list[str] = []
    player.acquire("frame 1", timeout=None)
    waiter = threading.Thread(target=lambda: (cell.acquire("cell", timeout=LIMIT), order.append("cell"), cell.release()))
    waiter.start()
    wait_until(lambda: [w["notebook"] for w in player.waiting()] == ["cell"], "the cell to queue")
    player.release()
    player.acquire("frame 2", timeout=LIMIT)  # right away, as Play does: behind the cell
    order.append("play")
    player.release()
    waiter.join(LIMIT)
    assert order == ["cell", "play"]


def test_blocked_work_refuses_other_clients_at_once_with_its_report(directory):
    a, b = client(directory, "00_start_here.ipynb"), client(directory, "other.ipynb")
    a.acquire("wb.run: recv", timeout=None)
    token = object()
    a.mark_blocked("rank 0: blocked in MPI_Recv(source=1, tag=99)", token)
    started = time.monotonic()
    with pytest.raises(WorldBlocked, match="00_start_here.ipynb") as caught:
        b.acquire("wb.run: bcast", timeout=LIMIT)
    assert time.monotonic() - started < LIMIT / 2, "refused, not waited for"
    assert "MPI_Recv(source=1, tag=99)" in str(caught.value) and "wb.restart()" in str(caught.value)
    assert [c["state"] for c in b.clients() if c["notebook"] == "00_start_here.ipynb"] == ["blocked"]
    with pytest.raises(WorldBusy):  # a restart waits for the blocked work to end, bounded
        b.acquire("restarting", timeout=0.2, restarting=True)
    a.acquire("a later call of the same notebook", timeout=0.1)  # joins, behind its own work
    a.release(token)  # the blocked call ended (its engines were killed, say)
    assert not b.holder()["blocked"], "no longer blocked once that call ended"
    a.release()
    b.acquire("wb.run: bcast", timeout=1)
    b.release()


def _child(directory, action: str) -> subprocess.Popen:
    code = textwrap.dedent(f"""
        import sys, time
        from mpiworkbench.client.calls.clients import ClientInfo
        from mpiworkbench.client.calls.turns import Turns
        w = Turns({str(directory)!r}, ClientInfo.here(), say=lambda line: None)
        {action}
        print("ready", flush=True)
        time.sleep(600)
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_killed_client_frees_the_world_and_leaves_no_trace(directory):
    here = client(directory, "survivor")
    holder = _child(directory, "w.acquire('a long cell', None)")
    waiter = None
    try:
        assert holder.stdout.readline().strip() == "ready"  # holds the turn: only then the waiter
        waiter = _child(directory, "import threading; threading.Thread(target=w.acquire, args=('queued', None), daemon=True).start()")
        assert waiter.stdout.readline().strip() == "ready"
        wait_until(lambda: len(here.waiting()) == 1, "the second child to queue")
        assert {c["state"] for c in here.clients()} == {"running", "waiting", "idle"}
        os.kill(waiter.pid, signal.SIGKILL)
        waiter.wait(LIMIT)
        os.kill(holder.pid, signal.SIGKILL)  # a kernel killed while its work runs
        holder.wait(LIMIT)
        here.acquire("after them", timeout=LIMIT)  # the dead waiter's ticket does not block the line
        assert [c["notebook"] for c in here.clients()] == ["survivor"], "dead clients are dropped"
        here.release()
    finally:
        for child in filter(None, (holder, waiter)):
            if child.poll() is None:
                child.kill()
                child.wait(LIMIT)
            child.stdout.close()


def test_interrupting_a_wait_leaves_the_queue_and_harms_nobody(directory, monkeypatch):
    monkeypatch.setattr(world_module, "SAY_AFTER_S", 0.0)
    a = client(directory, "holder")
    b = Turns(directory, ClientInfo.here(), say=lambda _line: (_ for _ in ()).throw(KeyboardInterrupt()))
    a.acquire("work", timeout=None)
    with pytest.raises(KeyboardInterrupt):
        b.acquire("my cell", timeout=LIMIT)
    assert b.waiting() == [] and a.holding and b.holder()["notebook"] == a.me.notebook
    a.release()


def test_the_engine_set_record_tells_others_of_a_restart(directory):
    a, b = client(directory, "a"), client(directory, "b")
    a.record_engine_set({0: 0, 1: 1}, engines={"0": [0, "u0"], "1": [1, "u1"]})
    assert b.changed_since_seen()["generation"] == 1
    assert b.changed_since_seen() is None, "told once"
    time.sleep(0.01)  # a new mtime (ns resolution) for the second write
    b.record_engine_set({2: 0, 3: 1}, restarted=True, engines={"2": [0, "u2"], "3": [1, "u3"]})
    record = a.changed_since_seen()
    assert record["generation"] == 2 and record["restarted_by"]["notebook"] == "b"
    assert record["ranks"] == {"2": 0, "3": 1}


def test_leaving_the_world(directory):
    a, b = client(directory, "a"), client(directory, "b")
    a.acquire("work", timeout=None)
    a.close()  # a detach gives the turn up
    assert b.holder() is None and [c["notebook"] for c in b.clients()] == ["b"]
    b.remove()
    assert not directory.exists()
