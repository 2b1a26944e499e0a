"""The session object against real MPI engines."""

from __future__ import annotations

import numpy as np
import pytest

from mpiworkbench import ExecutionTimeout, RankFailure, Workbench
from tests.process_tree import descendants, listening_addresses

pytestmark = pytest.mark.cost(40)


def _world():
    from mpi4py import MPI

    return MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size


def _gather_ranks_to_root():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    full = comm.gather(np.full(3, comm.rank, dtype=float), root=0)
    return None if full is None else np.concatenate(full)


def _fail_on_root_before_barrier():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        raise ZeroDivisionError("rank 0 gives up before the barrier")
    comm.Barrier()
    return comm.rank


def _fail_everywhere(value):
    raise ValueError(f"bad value {value}")


@pytest.mark.parametrize("fresh_wb", [1, 2, 3], indirect=True)
def test_engines_are_the_ranks_of_one_world(fresh_wb):
    n = fresh_wb.n
    assert fresh_wb.run(_world) == [(r, n) for r in range(n)]
    assert sorted(fresh_wb.ranks.values()) == list(range(n))
    assert fresh_wb.view.targets == sorted(fresh_wb.ranks, key=fresh_wb.ranks.get)


def test_gather_by_mpi_then_one_pull(wb):
    results = wb.run(_gather_ranks_to_root)
    np.testing.assert_array_equal(results[0], np.repeat(np.arange(wb.n, dtype=float), 3))
    assert all(r is None for r in results[1:])


def test_failure_on_every_rank_is_reported_per_rank(wb):
    with pytest.raises(RankFailure) as info:
        wb.run(_fail_everywhere, 7)
    assert info.value.failed == list(range(wb.n))
    assert "ValueError: bad value 7" in str(info.value)


@pytest.mark.parametrize("fresh_wb", [2, 3], indirect=True)
def test_rank_failing_before_collective_does_not_hang(fresh_wb):
    with pytest.raises(ExecutionTimeout) as info:
        fresh_wb.run(_fail_on_root_before_barrier)
    report = info.value
    assert report.failed == [0]
    assert report.running == list(range(1, fresh_wb.n))
    assert "ZeroDivisionError" in str(report) and "wb.restart()" in str(report)
    old_engines = set(fresh_wb.ranks)
    fresh_wb.restart()
    assert fresh_wb.run(_world) == [(r, fresh_wb.n) for r in range(fresh_wb.n)]
    assert set(fresh_wb.ranks) != old_engines or fresh_wb.run(lambda: 1) == [1] * fresh_wb.n


def test_slow_execution_times_out_then_recovers():
    # 5 s: rank 0, which hands the call on, says which ranks finished once the call runs past
    # 0.5 s (client/ranks/relay.py); with the tiers side by side on 2 cores that took more than 1 s once
    bench = Workbench(n=2, timeout=5.0)
    try:
        bench.start()

        def _block():
            from mpi4py import MPI

            if MPI.COMM_WORLD.rank == 1:
                MPI.COMM_WORLD.recv(source=0, tag=99)  # nobody sends: a deadlock
            return 0

        with pytest.raises(ExecutionTimeout) as info:
            bench.run(_block)
        assert info.value.running == [1] and info.value.failed == []
        bench.restart()
        assert bench.run(_world) == [(0, 2), (1, 2)]
    finally:
        bench.stop()
    assert bench.state == "stopped"


def test_remote_objects_live_on_the_engines(wb):
    obj = wb.create("collections:Counter", "mpi")
    assert obj.call("most_common", 1) == [[("m", 1)]] * wb.n
    assert obj.root("total") == 3
    obj.delete()


def test_remote_object_on_a_sub_communicator(wb):
    # rank_info(comm=...) returns a dict: a fine stand-in for an engine-side object
    sub = wb.create("mpiworkbench.core.machine:rank_info", nranks=1)
    assert sub.holds == [True] + [False] * (wb.n - 1)
    assert sub.call("get", "size") == [1] + [None] * (wb.n - 1)
    sub.delete()


def test_oversubscription_needs_consent():
    with pytest.raises(ValueError, match="oversubscribe=True"):
        Workbench(n=64)


def test_bad_rank_count():
    with pytest.raises(ValueError, match="positive number of MPI ranks; got 0"):
        Workbench(n=0)


def test_controller_listens_on_loopback_only(wb):
    controller = wb.cluster.controller.process.pid
    addresses = listening_addresses([controller, *descendants(controller)])
    assert addresses, "the controller should listen on some port"
    assert all(a.startswith("127.") for a in addresses), addresses


def test_thread_level_is_selectable():
    def level():
        from mpiworkbench.core.machine import thread_level_name
        from mpi4py import MPI

        return thread_level_name(MPI.Query_thread())

    bench = Workbench(n=1, thread_level="single")
    try:
        bench.start()
        assert bench.run(level) == ["single"]
    finally:
        bench.stop()


def test_thread_level_must_be_known():
    with pytest.raises(ValueError, match="thread_level must be one of single, funneled, serialized, multiple"):
        Workbench(n=1, thread_level="triple")


def _wait_in_recv_until_yielding(flag: str) -> list:
    """Rank 0 waits in ``MPI_Recv`` from rank 1 until its own helper thread has seen MPICH's yield
    turn on (then it writes *flag*, and rank 1 sends); what rank 0 saw: the variable during the
    wait, and once the receive returned (``None``: never within the limit)."""
    import os
    import threading
    import time

    import numpy as np
    from mpi4py import MPI

    from mpiworkbench.core import yielding

    def until(condition, limit=60.0):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.05)
        return False

    comm, buf = MPI.COMM_WORLD, np.zeros(1)
    if comm.rank == 1:
        until(lambda: os.path.exists(flag))
        comm.Send(buf, dest=0)
        return []
    switch = yielding.switch()
    seen = []
    watcher = threading.Thread(target=lambda: seen.append(until(lambda: switch.value() == 1))
                               or open(flag, "w").close())
    watcher.start()
    comm.Recv(buf, source=1)
    watcher.join()
    seen.append(until(lambda: switch.value() == 0, limit=30.0))
    return seen


def test_a_rank_waiting_long_in_mpi_yields_its_core_until_the_call_returns(wb, tmp_path):
    """MPICH's ``MPIR_CVAR_ENABLE_HEAVY_YIELD`` turned on by the rank's reporter once it has waited
    in one call for ``YIELD_AFTER_S``, and off as soon as the call returned (core/yielding.py)."""
    flag = str(tmp_path / "yielding")
    seen = wb.run(_wait_in_recv_until_yielding, flag)
    assert seen[0] == [True, True], seen
    # and the world communicates on at full speed: a short call spins again
    assert wb.run(lambda: __import__("mpi4py.MPI").MPI.COMM_WORLD.allreduce(1)) == [2, 2]
