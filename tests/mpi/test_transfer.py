"""Arrays spread from one rank and gathered back (``wb.push``/``scatter``/``collect``'s MPI part):
the same values on every rank, each rank its own writable copy, uneven row splits, simulated
hosts, any communicator."""

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.core import hostcopy
from mpiworkbench.core.transfer import bcast_value, gather_rows, row_counts, scatter_rows

COMMS = [MPI.COMM_WORLD, MPI.COMM_SELF]


@pytest.mark.parametrize("comm", COMMS, ids=["world", "self"])
def test_bcast_gives_every_rank_the_root_array_and_objects_pickled(comm):
    source = np.arange(7 * 5, dtype=np.float32).reshape(7, 5) if comm.rank == 0 else None
    got = bcast_value(source, comm)
    assert got.dtype == np.float32 and np.array_equal(got, np.arange(35, dtype=np.float32).reshape(7, 5))
    assert bcast_value({"a": [1, 2]} if comm.rank == 0 else None, comm) == {"a": [1, 2]}


@pytest.mark.parametrize("comm", COMMS, ids=["world", "self"])
def test_bcast_of_a_read_only_array_gives_each_rank_its_own_writable_copy(comm):
    # what ipyparallel gives rank 0: a read-only array, here in big-endian order too
    source = np.arange(1000, dtype=">i8")
    source.flags.writeable = False
    got = bcast_value(source if comm.rank == 0 else None, comm)
    assert got.dtype == np.int64 and got.flags.writeable and np.array_equal(got, np.arange(1000))
    got[comm.rank] = -1  # a rank's write is its own
    assert comm.allgather(int((got == -1).sum())) == [1] * comm.size
    assert got[comm.rank] == -1 and np.array_equal(np.delete(got, comm.rank), np.delete(np.arange(1000), comm.rank))


@pytest.mark.parametrize("hosts", [1, 2, 3])
def test_bcast_across_simulated_hosts_from_any_root(hosts):
    # ranks split into *hosts* groups as if on different machines: the root writes its host's
    # window, one rank per other host receives by Bcast
    comm = MPI.COMM_WORLD
    root = comm.size - 1
    source = np.linspace(0, 1, 3 * 4 * 5).reshape(3, 4, 5) if comm.rank == root else None
    got = bcast_value(source, comm, root=root, host=comm.rank % hosts)
    assert got.shape == (3, 4, 5) and np.array_equal(got, np.linspace(0, 1, 60).reshape(3, 4, 5))


def test_bcast_when_some_ranks_cannot_map_the_host_copy_or_no_system_can(monkeypatch):
    # a rank that cannot open the host's copy (another PID namespace, no /proc access) gets it by
    # Bcast; without memfd_create every rank does
    comm = MPI.COMM_WORLD
    expected = np.arange(12.0).reshape(3, 4)
    mapped = hostcopy.private_map

    def refused_on_odd_ranks(*args):
        if comm.rank % 2:
            raise OSError("refused (test)")
        return mapped(*args)

    monkeypatch.setattr(hostcopy, "private_map", refused_on_odd_ranks)
    got = bcast_value(expected if comm.rank == 0 else None, comm)
    assert np.array_equal(got, expected) and got.flags.writeable
    monkeypatch.setattr(hostcopy, "available", lambda: False)
    got = bcast_value(expected.T if comm.rank == 0 else None, comm)
    assert np.array_equal(got, expected.T) and got.flags.writeable


@pytest.mark.parametrize("comm", COMMS, ids=["world", "self"])
def test_bcast_of_empty_and_zero_dimensional_arrays(comm):
    assert bcast_value(np.empty((0, 4)) if comm.rank == 0 else None, comm).shape == (0, 4)
    got = bcast_value(np.array(2.5) if comm.rank == 0 else None, comm)
    assert got.shape == () and got == 2.5


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
