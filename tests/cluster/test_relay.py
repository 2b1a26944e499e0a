"""Calls on every rank go to rank 0's engine alone, which hands them to the other ranks
(:mod:`mpiworkbench.client.ranks.relay`): at 1, 2 and 3 ranks, the notebook sends one message and takes
in one, each rank runs its own copy of the call in its kernel, and a rank that never finishes is
told apart from those that did."""

from __future__ import annotations

import pytest

from mpiworkbench import ExecutionTimeout
from mpiworkbench.client.ranks import relay
from mpiworkbench.client.calls.relayed import MessageCounter

pytestmark = pytest.mark.cost(35)


def _request_seen_here():
    """On a rank: its MPI rank, the id of the request its kernel is running and the id of the
    call it is a copy of."""
    from IPython import get_ipython
    from mpi4py import MPI

    parent = get_ipython().kernel.get_parent("shell")
    return MPI.COMM_WORLD.rank, parent["header"]["msg_id"], parent["metadata"].get("original_msg_id", "")


def _set_and_read(value):
    """On a rank: keep *value* in the kernel's namespace (what ``%px`` sees), return it."""
    from IPython import get_ipython

    get_ipython().user_ns["relayed"] = value
    return get_ipython().user_ns["relayed"]


@pytest.mark.parametrize("fresh_wb", [1, 2, 3], indirect=True)
def test_rank_0_hands_the_call_to_every_other_rank(fresh_wb):
    wb = fresh_wb
    engine0 = next(engine for engine, rank in wb.ranks.items() if rank == 0)
    seen = wb.run(_request_seen_here)
    bview = wb.calls.relay_view()
    assert bview.targets == engine0 and bview.label == relay.LABEL  # the request went to rank 0 alone
    ranks, ids, originals = zip(*seen)
    assert list(ranks) == list(range(wb.n))
    call = ids[0]  # rank 0 ran the request itself; each other rank a copy named after it
    assert list(ids[1:]) == [f"{call}_{rank}" for rank in range(1, wb.n)]
    assert set(originals[1:]) <= {call}
    counter = MessageCounter(wb.client.session)
    assert counter.wait_quiet()
    for _ in range(5):
        wb.run(_set_and_read, 1)
    assert counter.wait_quiet()
    assert (counter.sent, counter.received) == (5, 5)
    # the ranks ran it in their kernels: %px sees what the call left there
    assert wb.run(_set_and_read, "kept") == ["kept"] * wb.n
    assert wb.view.pull("relayed", block=True) == ["kept"] * wb.n


def _rank_1_blocks():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.rank == 1:
        comm.recv(source=0, tag=77)  # nobody sends: rank 1 never finishes
    return comm.rank


@pytest.mark.parametrize("fresh_wb", [2, 3], indirect=True)
def test_a_rank_that_never_finishes_is_told_from_those_that_did(fresh_wb):
    wb = fresh_wb
    wb.timeout = 3.0
    with pytest.raises(ExecutionTimeout) as raised:
        wb.run(_rank_1_blocks)
    # rank 0 waits for rank 1's reply (it cannot answer a probe): it said it had finished
    assert raised.value.running == [1] and raised.value.failed == []
    assert [s.rank for s in raised.value.statuses if s.state == "ok"] == [r for r in range(wb.n) if r != 1]
