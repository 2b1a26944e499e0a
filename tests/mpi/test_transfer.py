"""Arrays spread from one rank and gathered back (``wb.push``/``scatter``/``collect``'s MPI part):
the same values on every rank, uneven row splits, any communicator."""

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.core.transfer import bcast_value, gather_rows, row_counts, scatter_rows

COMMS = [MPI.COMM_WORLD, MPI.COMM_SELF]


@pytest.mark.parametrize("comm", COMMS, ids=["world", "self"])
def test_bcast_gives_every_rank_the_root_array_and_objects_pickled(comm):
    source = np.arange(7 * 5, dtype=np.float32).reshape(7, 5) if comm.rank == 0 else None
    got = bcast_value(source, comm)
    assert got.dtype == np.float32 and np.array_equal(got, np.arange(35, dtype=np.float32).reshape(7, 5))
    assert bcast_value({"a": [1, 2]} if comm.rank == 0 else None, comm) == {"a": [1, 2]}


@pytest.mark.parametrize("comm", COMMS, ids=["world", "self"])
@pytest.mark.parametrize("rows", [1, 10, 11])
def test_scatter_then_gather_by_rows_is_the_array_again(comm, rows):
    whole = np.arange(rows * 3, dtype=np.int64).reshape(rows, 3)
    mine = scatter_rows(whole if comm.rank == 0 else None, comm)
    counts = row_counts(rows, comm.size)
    start = sum(counts[:comm.rank])
    assert np.array_equal(mine, whole[start:start + counts[comm.rank]])
    back = gather_rows(mine, comm)
    if comm.rank == 0:
        assert np.array_equal(back, whole)
    else:
        assert back is None


def test_row_counts_split_unevenly_first_ranks_first():
    assert row_counts(11, 3) == [4, 4, 3] and row_counts(2, 3) == [1, 1, 0]
