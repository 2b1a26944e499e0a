"""Debugging the ranks as JupyterLab does: ``debug_request`` messages over each rank's own
kernel connection (its connection file, :meth:`Session.connection_file`), through
``jupyter_client`` — breakpoints in a ``%%px`` cell and in a package function, every rank
stopping, one rank stepping while the others wait, and a world being debugged never called hung."""

from __future__ import annotations

import json
import queue
import threading
import time

import pytest

from tests.cluster.test_mpi_implementations import OTHERS, _installed

pytestmark = pytest.mark.cost(110, (
                         "breakpoints on every rank at 2 and 3 ranks, bound and relayed, and under each "
                         "installed MPI library"))

CELL = """from mpi4py import MPI
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
x = rank * 10
y = x + 1
total = comm.allreduce(y)
"""
#: line of CELL to stop at (1-based): ``x = rank * 10``
STOP = 4

HALO_CELL = """import numpy as np
from mpi4py import MPI
from mpiworkbench.solvers.halo import HaloExchange
cart = MPI.COMM_WORLD.Create_cart([MPI.COMM_WORLD.size, 1, 1])
halo = HaloExchange(cart, (5, 4, 4))
u = np.full((5, 4, 4), float(cart.Get_rank()))
halo.exchange(u)
lower_ghost = float(u[0, 2, 2])
halo.free()
"""


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path, monkeypatch):
    """The ranks' connection files go to a runtime directory of the test's own."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


class Cell:
    """A ``%%px`` cell run in a thread (the test drives the debugger meanwhile)."""

    def __init__(self, shell, code: str):
        self.result = None
        self.thread = threading.Thread(target=self._run, args=(shell, code), daemon=True)
        self.thread.start()

    def _run(self, shell, code):
        self.result = shell.run_cell("%%px --no-stream\n" + code)

    def finished(self, limit: float = 120) -> bool:
        self.thread.join(limit)
        return not self.thread.is_alive()


def _wait_until(condition, what: str, limit: float = 60):
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, f"waited {limit} s for {what}"
        time.sleep(0.05)


def _debugger_state() -> dict:
    """On a rank: what its kernel's debugger holds (ipykernel's, with the workbench's debugpy
    start) and whether debugpy's adapter (a process of its own, not the rank's child) accepts a
    connection on its port: what a failure to answer a debug request is read from."""
    import socket

    from IPython import get_ipython

    debugger = get_ipython().kernel.debugger
    client = debugger.debugpy_client
    state = {key: repr(getattr(debugger, key, None)) for key in ("is_started", "debugpy_initialized", "stopped_threads")}
    state.update(port=client.debugpy_port, routing_id=repr(client.routing_id), init_seq=client.init_event_seq,
                 wait_for_attach=client.wait_for_attach, queued=client.message_queue.message_queue.qsize(),
                 tcp_buffer=client.message_queue.tcp_buffer[:300])
    try:
        with socket.create_connection((client.debugpy_host, int(client.debugpy_port)), timeout=5):
            state["adapter_accepts"] = True
    except (OSError, ValueError) as exc:
        state["adapter_accepts"] = repr(exc)
    return state


def _started(wb) -> list[bool]:
    """Whether each rank's debugger is started now (its kernel's ``debugInfo``, asked by a client of
    its own, which leaves it as it is)."""
    from mpiworkbench.client.calls.rank_debugger import RankDebugger

    said = []
    for rank in range(wb.n):
        asked = RankDebugger(rank, wb.connection_file(rank))
        try:
            said.append(asked.request("debugInfo")["body"]["isStarted"])
        finally:
            asked.client.stop_channels()
    return said


@pytest.mark.parametrize("relay", [False, True], ids=["bound", "relayed"])
@pytest.mark.parametrize("fresh_wb", [2, 3], indirect=True, ids=["2ranks", "3ranks"])
def test_breakpoint_in_a_px_cell_stops_every_rank_one_steps_all_continue(shell, fresh_wb, runtime_dir, relay):
    """Each rank's kernel bound for Jupyter clients, or reached through the controller from a
    relay on loopback (what a cluster across hosts, secured with CurveZMQ, always uses)."""
    wb = fresh_wb  # (the shell first: starting the workbench registers %%px on it)
    files = {rank: wb.connection_file(rank, proxy=relay) for rank in range(wb.n)}
    keys = set()
    for rank, path in files.items():  # a Jupyter connection file, signed with a key
        info = json.loads(path.read_text())
        assert path.parent == runtime_dir / "external_kernels" and path.stat().st_mode & 0o077 == 0
        assert info["key"] and info["ip"] == "127.0.0.1" and info["debuggable"], info
        keys.add(info["key"])
    # bound: the cluster's key; relayed: a key of each relay's own, not the cluster's
    cluster_key = wb.client.session.key.decode()
    assert keys == ({cluster_key} if not relay else keys - {cluster_key}) and len(keys) == (wb.n if relay else 1)

    with wb.debug(proxy=relay) as dbg:
        taken = dbg.break_in_cell(CELL, STOP)
        assert taken == {rank: [STOP] for rank in range(wb.n)}
        cell = Cell(shell, CELL)
        frames = dbg.wait_stopped()
        assert {rank: f["line"] for rank, f in frames.items()} == {rank: STOP for rank in range(wb.n)}
        for rank in range(wb.n):
            assert dbg[rank].variables()["rank"] == str(rank)
        assert dbg.where() == {f"cell line {STOP}": list(range(wb.n))}
        assert wb.state == "debugging"
        assert any(f"rank 0 stopped at a breakpoint (cell line {STOP})" == line for line in wb.where()), wb.where()

        dbg[1].next()  # rank 1 only: the others stay where they are
        dbg[1].wait_for("stopped")
        assert dbg[1].stack()[0]["line"] == STOP + 1 and dbg[1].variables()["x"] == "10"
        assert all(dbg[r].stack()[0]["line"] == STOP for r in range(wb.n) if r != 1)

        dbg.continue_()
        assert cell.finished(), "the cell did not finish once every rank continued"
    assert cell.result.error_in_exec is None, cell.result.error_in_exec
    assert _pulled(wb, "total") == [sum(10 * r + 1 for r in range(wb.n))] * wb.n
    assert wb.stops() == {} and wb.state == "running"
    if relay:
        _a_wrong_key_runs_nothing(wb, files[0])


def _a_wrong_key_runs_nothing(wb, path):
    """A client signing with another key than the relay's file holds is refused: its request is
    dropped (counted), never reaches the rank, and gets no reply."""
    from jupyter_client import BlockingKernelClient

    from mpiworkbench.client.calls.kernel_proxy import proxies_of

    relay = proxies_of(wb._connection)[0]
    before = relay.dropped
    forger = BlockingKernelClient(connection_file=str(path))
    forger.load_connection_file()
    forger.session.key = b"not-the-key"
    forger.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        forger.execute("import os; os._exit(3)")  # would end the rank if it ran
        _wait_until(lambda: relay.dropped > before, "the relay to refuse the forged request")
        with pytest.raises(queue.Empty):  # nothing came back
            forger.get_shell_msg(timeout=1)
    finally:
        forger.stop_channels()
    assert wb.run(lambda: 1) == [1] * wb.n  # every rank is alive


def _pulled(wb, name: str) -> list:
    """*name* of the cell's, from every rank's namespace."""
    return [wb.pull(name, rank) for rank in range(wb.n)]


def _first_code_line(function) -> int:
    code = function.__code__
    return min(line for _, _, line in code.co_lines() if line is not None and line > code.co_firstlineno)


@pytest.mark.parametrize("fresh_wb", [2, 3], indirect=True, ids=["2ranks", "3ranks"])
def test_breakpoint_in_a_package_function_called_from_a_cell(shell, fresh_wb):
    from mpiworkbench.solvers.halo import HaloExchange

    wb = fresh_wb
    line = _first_code_line(HaloExchange.exchange)
    with wb.debug() as dbg:
        dbg.break_at(HaloExchange.exchange.__code__.co_filename, line)
        cell = Cell(shell, HALO_CELL)
        frames = dbg.wait_stopped()
        for rank, frame in frames.items():
            assert frame["name"] == "exchange" and frame["line"] == line, frame
        assert dbg.where() == {f"halo.py line {line}, in exchange": list(range(wb.n))}
        local = dbg[wb.n - 1].variables()
        assert {"self", "u"} <= set(local), local
        caller = dbg[wb.n - 1].variables(frame=1)  # the cell's frame, one up
        assert caller["u"].startswith("array(") and "lower_ghost" not in caller
        dbg.continue_()
        assert cell.finished()
    assert cell.result.error_in_exec is None, cell.result.error_in_exec
    assert _pulled(wb, "lower_ghost") == [0.0] + [float(rank - 1) for rank in range(1, wb.n)]


@pytest.mark.parametrize("fresh_wb", [2], indirect=True, ids=["2ranks"])
def test_after_a_session_the_ranks_run_untraced_and_the_next_session_stops_them_again(shell, fresh_wb, tmp_path):
    """debugpy, once started in a rank, traced its code for good: after one session the ranks ran
    Python 2-17 times slower (importing the backends 55 s instead of 3), and notebook 00's first
    call timed out on two nodes under load, after notebook 15 had debugged them. Between sessions
    the ranks' requests now run untraced; a later session (a breakpoint in a function the cell
    calls: each new frame must be traced again) still stops every rank. Before them, a debugger
    asked for while the ranks run a cell, before any rank was ever debugged: it says why it does
    not start, and leaves no rank half-started once the cell ends."""
    from mpiworkbench.solvers.halo import HaloExchange

    def traced() -> bool:  # on a rank: whether its main thread runs traced
        import sys

        return sys.gettrace() is not None

    wb = fresh_wb
    # first, a debugger asked for while the ranks run a cell, before any was debugged: debugpy
    # starts on a rank's main thread, so the start waits; given up, it says why, and the start
    # that completes once the cell ends is undone (the sessions below find every rank unstarted)
    from mpiworkbench.client.calls.debugging import Debugging
    from mpiworkbench.client.calls.rank_debugger import NoAnswer

    files = {rank: wb.connection_file(rank) for rank in range(wb.n)}
    busy = threading.Thread(target=wb.execute, args=(
        f"import pathlib, time\nfrom mpi4py import MPI\npathlib.Path({str(tmp_path)!r}, f'running-{{MPI.COMM_WORLD.rank}}')"
        ".touch()\ntime.sleep(20)",), daemon=True)
    busy.start()
    _wait_until(lambda: all((tmp_path / f"running-{rank}").exists() for rank in range(wb.n)), "every rank to run the cell")
    with pytest.raises(NoAnswer, match="the first time a rank is debugged, its debugger starts on the rank's main "
                                       "thread, which must be idle"):
        Debugging(files, timeout=5)
    busy.join(120)
    assert not busy.is_alive()

    _wait_until(lambda: _started(wb) == [False] * wb.n, "the late starts to be undone")
    line = _first_code_line(HaloExchange.exchange)
    for session in range(2):
        try:
            debugging = wb.debug()
        except NoAnswer as exc:  # (once in CI, 'initialize' after the undone start: what the ranks hold)
            raise AssertionError(f"session {session}: {exc}\nthe ranks' debuggers: {wb.run(_debugger_state)}") from exc
        with debugging as dbg:
            dbg.break_at(HaloExchange.exchange.__code__.co_filename, line)
            assert wb.run(traced) == [True] * wb.n  # a session traces the ranks' requests
            cell = Cell(shell, HALO_CELL)
            frames = dbg.wait_stopped()
            assert [(f["name"], f["line"]) for f in frames.values()] == [("exchange", line)] * wb.n, (session, frames)
            dbg.continue_()
            assert cell.finished()
        assert cell.result.error_in_exec is None, cell.result.error_in_exec
        assert wb.run(traced) == [False] * wb.n, session  # and nothing traces them after it


@pytest.mark.parametrize("fresh_wb", [3], indirect=True, ids=["3ranks"])
def test_a_stopped_rank_is_not_a_hang_and_no_timeout_ends_the_world(shell, fresh_wb):
    """Rank 0 stopped before the allreduce, the others inside it: past the workbench's timeout
    twice over, nothing reports a hang or marks the world blocked; continuing finishes the cell."""
    wb = fresh_wb
    # long enough for rank 0 to reach its breakpoint under load: a cell that runs past its
    # timeout before any rank stopped is a real timeout (run 2 of 2026-11-27, 3 s, under load)
    wb.timeout = 10.0
    with wb.debug(ranks=[0]) as dbg:
        dbg.break_in_cell(CELL, STOP)
        cell = Cell(shell, CELL)
        dbg.wait_stopped()
        # (mpi4py's first pickled collective on a communicator duplicates it: MPI_Comm_dup)
        waiting = [f"rank {r} waiting in MPI_" for r in (1, 2)]
        _wait_until(lambda: all(any(line.startswith(w) for line in wb.where()) for w in waiting),
                    "ranks 1 and 2 to wait in an MPI call for rank 0")
        until = time.monotonic() + 2 * wb.timeout
        while time.monotonic() < until:  # the subject of the test: time passing beyond the timeout
            assert wb.state == "debugging", wb.state
            assert cell.thread.is_alive(), cell.result
            time.sleep(0.1)
        assert wb.where()[0] == f"rank 0 stopped at a breakpoint (cell line {STOP})"
    assert cell.finished()  # leaving the block continued rank 0
    assert cell.result.error_in_exec is None, cell.result.error_in_exec
    assert wb.state == "running" and _pulled(wb, "total") == [1 + 11 + 21] * 3


@pytest.mark.parametrize("fresh_wb", [2, 3], indirect=True, ids=["2ranks", "3ranks"])
def test_px_debug_stops_the_ranks_named_and_another_client_continues_them(shell, fresh_wb):
    """``%%px --debug 1 --break 4``: rank 1 stops at the cell's line 4, the others wait for it in
    MPI; a second client of rank 1's kernel (as JupyterLab's Debugger sidebar on a console of
    it) joins the running debugger, sees rank 1's variables and continues it; the cell ends
    with the right result and the magic's debugger is gone."""
    wb = fresh_wb
    cell = threading.Thread(target=lambda: setattr(cell, "result", shell.run_cell(
        f"%%px --no-stream --debug 1 --break {STOP}\n" + CELL)), daemon=True)
    cell.start()
    _wait_until(lambda: 1 in wb.stops(), "rank 1 to stop at the breakpoint", limit=120)
    assert sorted(wb.stops()) == [1]
    assert wb.where()[1] == f"rank 1 stopped at a breakpoint (cell line {STOP})"
    from mpiworkbench.client.calls.rank_debugger import DebuggerError, RankDebugger

    lab = RankDebugger(1, wb.connection_file(1)).start()
    try:
        assert lab.joined and lab.stack()[0]["line"] == STOP
        assert lab.variables()["rank"] == "1"
        # the workbench's own threads (the hang reporter…) are not the user's to stop or list: a
        # Pause in JupyterLab showed the hang reporter's code instead of the cell (a CI run)
        listed = [t["name"] for t in lab.body("threads")["threads"]]
        assert "MainThread" in listed and not [t for t in listed if t.startswith("mpiworkbench")], listed
        lab.continue_()
    finally:
        lab.close()
    cell.join(120)
    assert not cell.is_alive() and cell.result.error_in_exec is None, getattr(cell, "result", None)
    assert _pulled(wb, "total") == [sum(10 * r + 1 for r in range(wb.n))] * wb.n
    # the magic detached: nobody debugs rank 1 now (debugpy no longer traces its code)
    assert _started(wb)[1] is False
    # debugpy started in rank 1 leaving nothing in its namespace (ipykernel's own start imports it there)
    assert wb.run(lambda: "debugpy" in globals()) == [False] * wb.n
    # a rank whose debugpy cannot start (rank 0 never debugged yet; its adapter's Python made
    # missing): the session says which rank and why, leaves no rank debugged, and the world answers
    wb.execute("import debugpy\nif __import__('mpi4py').MPI.COMM_WORLD.rank == 0:\n"
               "    debugpy.configure(python='/nonexistent/python')")
    with pytest.raises(DebuggerError, match=r"rank 0: .*debugpy did not start in this rank's process: "
                                            r"RuntimeError: error spawning debug adapter.*/nonexistent/python"):
        with wb.debug():
            pass
    assert _started(wb) == [False] * wb.n
    assert wb.run(lambda: 1) == [1] * wb.n


@pytest.mark.parametrize("name", [_installed(n) for n in OTHERS])
def test_every_rank_stops_and_continues_under_the_other_mpi_implementations(name):
    """The same breakpoint, variables and continue on a world of Open MPI's or Intel MPI's ranks
    (the code runs through ``dbg.execute``, as a ``%%px`` cell's)."""
    from mpiworkbench import Workbench

    with Workbench(n=2, mpi=name, timeout=120, activate=False) as wb:
        wb.start()
        with wb.debug() as dbg:
            dbg.break_in_cell(CELL, STOP)
            dbg.execute(CELL)
            frames = dbg.wait_stopped()
            assert {rank: f["line"] for rank, f in frames.items()} == {0: STOP, 1: STOP}
            assert [dbg[rank].variables()["rank"] for rank in (0, 1)] == ["0", "1"]
            dbg.continue_()
            dbg.finish()
        assert _pulled(wb, "total") == [1 + 11] * 2 and wb.stops() == {}
