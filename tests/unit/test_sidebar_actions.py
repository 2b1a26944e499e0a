"""The world's actions in the lab's world sidebar: the registry of a process's live sessions
(``connection.sessions_of``, fed by a session taking its engine set), the function the sidebar
calls in a notebook's kernel (``mpiworkbench.sidebar.actions.world_action``), and what the worlds'
JSON tells the sidebar to act with (the turn's holder's kernel, the clients' kernels)."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from mpiworkbench.client.calls.clients import ClientInfo
from mpiworkbench.client.calls.connection import LIVE_SESSIONS, Connection, sessions_of
from mpiworkbench.client.calls.session import Session
from mpiworkbench.client.calls.turns import Turns
from mpiworkbench.client.cluster.record import world_directory, write_json_atomic
from mpiworkbench.sidebar import actions, worlds


class FakeClient:
    def direct_view(self, targets):
        return SimpleNamespace(targets=targets, block=False)


def connected(cluster_id: str, profile_dir) -> Session:
    """A real session that took an engine set (as a start, an attach or a restart does), on a
    stand-in cluster and client: nothing is started."""
    session = Session(2, activate=False, cluster_id=cluster_id)
    cluster = SimpleNamespace(cluster_id=cluster_id, profile_dir=str(profile_dir))
    session._connection = Connection(cluster, owns_cluster=True, client=FakeClient())
    session._take_engine_set({"ranks": {0: 0, 1: 1}, "hosts": {}, "generation": 3, "thread_level": None})
    return session


def test_a_session_is_found_by_its_cluster_once_connected_and_not_after_it_stopped(tmp_path):
    a = connected("world-a", tmp_path / "profile_default")
    b = connected("world-b", tmp_path / "profile_mpi")
    assert a in LIVE_SESSIONS and b in LIVE_SESSIONS
    assert sessions_of("world-a") == [a]
    assert sessions_of("world-b", tmp_path / "profile_mpi") == [b]
    with pytest.raises(LookupError, match=r"'world-b' of .*profile_default"):
        sessions_of("world-b", tmp_path / "profile_default")  # same id, another profile: not it
    b._connection = None  # stopped: no longer connected
    with pytest.raises(LookupError) as info:
        sessions_of("world-b")
    message = str(info.value)
    assert "'world-b'" in message and "'world-a'" in message and "wb.restart()" in message
    # a session collected leaves the registry by itself
    del a, info  # (the error's traceback holds the sessions it looked at)
    gc.collect()
    with pytest.raises(LookupError, match="its connected sessions: none"):
        sessions_of("world-a")


def test_world_action_restarts_or_stops_the_session_of_that_world(tmp_path, monkeypatch):
    session = connected("world-c", tmp_path / "profile_default")
    done = []
    monkeypatch.setattr(session, "restart", lambda force=False: done.append(("restart", force)) or session, raising=False)
    monkeypatch.setattr(session, "stop", lambda cluster=False: done.append(("stop", cluster)) or "stopped the engines "
                        "and the controller", raising=False)
    line = actions.world_action("restart", "world-c", tmp_path / "profile_default")
    assert line == "world-c restarted: 2 fresh rank(s), everything on the old ones lost"
    assert repr(line) == str(line)  # a user expression's text/plain is the line itself
    assert actions.world_action("stop", "world-c") == "world-c: stopped the engines and the controller"
    assert done == [("restart", False), ("stop", False)]
    opened = []
    monkeypatch.setattr(actions, "connection_files",
                        lambda wb: opened.append(wb) or {rank: f"rank{rank}.json" for rank in (1, 0)})
    assert actions.world_action("open", "world-c") == "world-c: rank(s) 0, 1 open for debugging (their kernels listed in the lab)"
    assert opened == [session]
    with pytest.raises(ValueError, match="unknown world action 'kill'.*restart, stop, open"):
        actions.world_action("kill", "world-c")
    with pytest.raises(LookupError, match="'world-x'"):
        actions.world_action("stop", "world-x")


def test_the_worlds_json_names_the_holders_kernel_and_the_clients_kernels(tmp_path):
    directory = world_directory(tmp_path / "profile_default", "w")
    directory.mkdir(parents=True)
    write_json_atomic(directory / "world.json", {"ranks": {"0": 0, "1": 1}, "generation": 2})
    me = ClientInfo.here()
    me.notebook, me.kernel = "mine.ipynb", "k-mine"
    other = ClientInfo.here()
    other.notebook, other.kernel, other.since = "script.py", "", me.since + 1
    mine, theirs = Turns(directory, me, say=lambda _l: None), Turns(directory, other, say=lambda _l: None)
    try:
        world = worlds.read_worlds(tmp_path, lab_kernels={"k-mine"})[0]
        assert (world["holder_kernel"], world["holder_notebook"], world["holder_in_lab"]) == ("", None, False)
        assert [(c["notebook"], c["kernel"], c["lab"]) for c in world["clients"]] == [
            ("mine.ipynb", "k-mine", True), ("script.py", "", False)]
        assert world["notebooks"] == ["mine.ipynb", "script.py"] and world["generation"] == 2
        mine.acquire("%%px cell", timeout=10)
        world = worlds.read_worlds(tmp_path, lab_kernels={"k-mine"})[0]
        assert (world["holder_kernel"], world["holder_notebook"], world["holder_in_lab"]) == ("k-mine", "mine.ipynb", True)
        # a kernel of another lab (or this lab's list not having it): not one to interrupt from here
        world = worlds.read_worlds(tmp_path)[0]
        assert (world["holder_kernel"], world["holder_in_lab"]) == ("k-mine", False)
        assert not any(c["lab"] for c in world["clients"])
    finally:
        mine.close()
        theirs.close()


def test_after_a_restart_the_old_ranks_processes_are_not_shown_dead(tmp_path):
    """The ranks' processes are recorded when a call first arms them: between a restart and that
    call, the record is the old engine set's, whose processes the restart killed."""
    directory = world_directory(tmp_path / "profile_default", "r")
    directory.mkdir(parents=True)
    write_json_atomic(directory / worlds.RANK_PROCESSES, {"0": {"pid": 2 ** 22 + 7, "host": worlds.socket.gethostname(),
                                                                "started": 1}})
    written = (directory / worlds.RANK_PROCESSES).stat().st_mtime
    write_json_atomic(directory / "world.json", {"ranks": {"3": 0}, "generation": 1, "at": written - 60})
    assert worlds.read_worlds(tmp_path)[0]["ranks"][0]["state"] == "dead"  # armed since: its process is gone
    write_json_atomic(directory / "world.json", {"ranks": {"5": 0}, "generation": 2, "at": written + 60})
    world = worlds.read_worlds(tmp_path)[0]
    assert (world["generation"], world["ranks"][0]["state"], world["ranks"][0]["engine"]) == (2, "unknown", 5)
