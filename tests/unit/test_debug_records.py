"""A debugging session's record (``calls/debug_records.py``): the files its breakpoints are in,
named before they are asked for; which ranks a live session holds; and the watch that lets go
again a rank a dead session's late breakpoint stopped (no kernel: records, locks and stop files)."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from types import SimpleNamespace

import pytest

from mpiworkbench.client.calls import debug_records
from mpiworkbench.trace import stops


def _record(folder, name, ranks, locked=True):
    """A session's record as :func:`debug_records.hold` writes it, its lock held (a live client)
    or not (a dead one)."""
    path = folder / f"{name}.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if locked:
        fcntl.flock(fd, fcntl.LOCK_EX)
    content = {"ranks": ranks, "client": {"notebook": name}, "paths": []}
    os.write(fd, json.dumps(content).encode())
    return debug_records.Record(path, fd, content)


def test_a_breakpoint_s_file_is_in_the_record_before_it_is_asked_for(tmp_path):
    record = _record(tmp_path, "a", [1])
    record.note("/tmp/ipykernel_1/cell.py")
    record.note("/tmp/ipykernel_1/cell.py")  # once each
    record.note("/site/halo.py")
    assert json.loads((tmp_path / "a.json").read_text())["paths"] == ["/tmp/ipykernel_1/cell.py", "/site/halo.py"]
    record.let_go()
    assert not (tmp_path / "a.json").exists()
    record.note("/late.py")  # a session that ended has nothing left to record: no error


def test_only_a_live_session_holds_its_ranks(tmp_path):
    live = _record(tmp_path, "live", [0, 2])
    dead = _record(tmp_path, "dead", [1], locked=False)
    assert debug_records._held(tmp_path, 0) and debug_records._held(tmp_path, 2)
    assert not debug_records._held(tmp_path, 1), "a dead client's record holds nothing"
    live.let_go()
    assert not debug_records._held(tmp_path, 0)
    dead.let_go()


@pytest.fixture
def stopped_rank(monkeypatch):
    """A rank of this host (a pid no process has) whose stop file says it is stopped at *where*."""
    pid = 5_000_000 + os.getpid() % 100_000  # above Linux's PID_MAX_LIMIT (2**22): never a live process's
    path = stops.stop_path(pid)

    def stop(file):
        where = {"file": file, "line": 4, "function": "<module>"}
        with open(path, "w") as f:
            json.dump({"stopped_since": time.monotonic() if file else None, "where": where, "reason": "breakpoint",
                       "pauses": []}, f)

    yield pid, stop
    if os.path.exists(path):
        os.unlink(path)


def _session(pid):
    """A session whose rank 1 is process *pid* of this host (rank 0 one of another host)."""
    return SimpleNamespace(_rank_processes={0: {"host": "elsewhere", "pid": 1},
                                            1: {"host": socket.gethostname(), "pid": pid}},
                           _connection=SimpleNamespace(kernel_proxies=None))


def _watch(tmp_path, monkeypatch, pid, watched, seconds=1.0):
    """Run the watch over rank 1 (process *pid*); the ranks it let go."""
    released = []
    monkeypatch.setattr(debug_records, "release_rank", lambda s, rank: released.append(rank) or "continued")
    debug_records._watch(_session(pid), tmp_path, watched, time.monotonic() + seconds)
    return released


def test_the_watch_lets_go_a_rank_stopped_late_in_a_dead_session_s_file(tmp_path, monkeypatch, stopped_rank):
    pid, stop = stopped_rank
    stop("/tmp/ipykernel_7/cell.py")
    released = _watch(tmp_path, monkeypatch, pid, {1: {"/tmp/ipykernel_7/cell.py"}}, seconds=0.5)
    assert released and set(released) == {1}


def test_the_watch_leaves_other_stops_and_live_sessions_alone(tmp_path, monkeypatch, stopped_rank):
    pid, stop = stopped_rank
    stop("/tmp/ipykernel_7/another_cell.py")  # a stop of someone else's: not the dead session's file
    assert _watch(tmp_path, monkeypatch, pid, {1: {"/tmp/ipykernel_7/cell.py"}}, seconds=0.5) == []
    stop("/tmp/ipykernel_7/cell.py")
    live = _record(tmp_path, "live", [1])  # the same cell debugged again by a live client
    assert _watch(tmp_path, monkeypatch, pid, {1: {"/tmp/ipykernel_7/cell.py"}}, seconds=0.5) == []
    live.let_go()
    stop(None)  # running: nothing to let go
    assert _watch(tmp_path, monkeypatch, pid, {1: {"/tmp/ipykernel_7/cell.py"}}, seconds=0.5) == []


def test_stop_records_are_read_for_the_ranks_asked_for(stopped_rank):
    pid, stop = stopped_rank
    stop("/tmp/ipykernel_7/cell.py")
    assert set(debug_records.stop_records(_session(pid))) == {1}
    assert set(debug_records.stop_records(_session(pid), [1])) == {1}
    assert debug_records.stop_records(_session(pid), [0]) == {}


def test_the_watch_ends_when_the_session_leaves_its_world(tmp_path, monkeypatch, stopped_rank):
    pid, stop = stopped_rank
    stop("/tmp/ipykernel_7/cell.py")
    session = _session(pid)
    released = []

    def release(s, rank):
        released.append(rank)
        s._connection = None  # the session stopped meanwhile
        return "continued"

    monkeypatch.setattr(debug_records, "release_rank", release)
    began = time.monotonic()
    debug_records._watch(session, tmp_path, {1: {"/tmp/ipykernel_7/cell.py"}}, began + 60)
    assert released == [1] and time.monotonic() - began < 30
