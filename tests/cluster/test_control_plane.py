"""A world of 32 ranks through the broadcast path: each ``wb.run`` and ``%%px`` is one message
out of the notebook's process and one in (counted at the client's session), the cell's output
comes grouped by identical text with rank ranges, and its errors grouped by type."""

from __future__ import annotations

import pytest

from mpiworkbench import RankFailure, Workbench
from mpiworkbench.client.calls.relayed import MessageCounter

#: 32 ranks load both cores: not beside the tier's other tests (tests/timetable.py)
pytestmark = [pytest.mark.cost(30), pytest.mark.alone]

N = 32


def _rank_of_caller() -> int:
    from mpi4py import MPI

    return MPI.COMM_WORLD.Get_rank()


@pytest.fixture(scope="module")
def big():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    wb = Workbench(n=N, oversubscribe=True, timeout=300)
    shell.user_ns["wb"] = wb
    try:
        wb.start()
        yield wb, shell
    finally:
        wb.stop()
        InteractiveShell.clear_instance()


def _per_call(wb, counter, action, calls: int = 5) -> tuple[float, float]:
    action()  # warm-up (the engines' first broadcast installs the quiet statuses)
    assert counter.wait_quiet(), "messages kept coming in after the warm-up"
    sent, received = counter.sent, counter.received
    for _ in range(calls):
        action()
    assert counter.wait_quiet(), "messages kept coming in after the calls"  # late ones count too
    return (counter.sent - sent) / calls, (counter.received - received) / calls


def test_one_message_out_and_one_in_per_call(big):
    wb, shell = big
    assert wb.run(_rank_of_caller) == list(range(N))
    counter = MessageCounter(wb.client.session)
    assert _per_call(wb, counter, lambda: wb.run(_rank_of_caller)) == (1, 1)

    def cell():
        assert shell.run_cell("%%px\nx = mpi_rank").success
    assert _per_call(wb, counter, cell) == (1, 1)
    assert wb.run(abs, -3) == [3] * N


def test_output_is_grouped_by_identical_text_with_rank_ranges(big, capsys):
    wb, shell = big
    result = shell.run_cell("%%px\nprint('the same on every rank')\nprint('odd' if mpi_rank % 2 else 'even', "
                            "'and rank 7' if mpi_rank == 7 else '')\nmpi_size")
    assert result.success, result.error_in_exec
    out = capsys.readouterr().out
    assert out.count("the same on every rank") == 1 and f"[stdout:0-{N - 1}] the same on every rank" in out
    assert "[stdout:0, 2, 4" in out and "odd and rank 7" in out  # differing output: its own ranks
    assert f"Out[0-{N - 1}]: {N}" in out
    assert "[stdout:7]" in wb.last_output.raw() and len(wb.last_output.outputs) == N


def test_errors_are_grouped_by_type_with_their_ranks(big):
    wb, shell = big
    cell = ("%%px\nif mpi_rank < 20:\n    1 / 0\nelif mpi_rank < 30:\n    {}[mpi_rank]\n")
    result = shell.run_cell(cell)
    failure = result.error_in_exec
    assert isinstance(failure, RankFailure) and failure.failed == list(range(30))
    rendered = failure._render_traceback_()
    assert rendered.count("--- ranks 0-19 ---") == 1 and rendered.count("--- ranks 20-29 ---") == 1
    assert sum("Traceback (most recent call last)" in line for line in rendered) == 2  # one per type
    assert "ranks 30, 31: finished" in rendered[0]
    # a function run on every rank: the same grouping, and the world is usable afterwards
    with pytest.raises(RankFailure) as raised:
        wb.run(divmod, 1, 0)
    assert raised.value.failed == list(range(N))
    assert wb.run(_rank_of_caller) == list(range(N))


def _held(name: str):
    """On a rank: what its namespace holds under *name*, summarised (shape, dtype, sum, first bytes)."""
    from IPython import get_ipython

    value = get_ipython().user_ns[name]
    if not hasattr(value, "shape"):
        return value
    return value.shape, str(value.dtype), float(value.sum()), bytes(value.tobytes()[:64])


def _write_own_row(name: str) -> tuple[bool, int]:
    from IPython import get_ipython
    from mpi4py import MPI

    value, comm = get_ipython().user_ns[name], MPI.COMM_WORLD
    value[comm.rank % len(value)] = -1e300
    comm.Barrier()
    return bool(value.flags.writeable), int((value == -1e300).all(axis=1).sum())


def test_push_scatter_collect_through_mpi(big):
    import numpy as np

    wb, _shell = big
    data = np.random.default_rng(38).standard_normal((100, 3))
    wb.push("pushed", data)  # one transfer to rank 0, then Bcast
    assert wb.run(_held, "pushed") == [(data.shape, str(data.dtype), float(data.sum()), data.tobytes()[:64])] * N
    shapes = wb.scatter("rows", data)  # uneven: 100 rows over 32 ranks
    assert [s[0] for s in shapes] == [4] * 4 + [3] * 28 and all(s[1:] == (3,) for s in shapes)
    assert np.array_equal(wb.collect("rows"), data)
    # each rank's copy is its own and writable: a rank's write is seen by no other rank
    assert wb.run(_write_own_row, "pushed") == [(True, 1)] * N
    wb.push("config", {"steps": 3})  # not an array: pickled once, broadcast
    assert wb.run(_held, "config") == [{"steps": 3}] * N
