"""Arrays spread from one rank to all and collected back by MPI: what ``wb.push``, ``wb.scatter``
and ``wb.collect`` run on the ranks after one transfer between the notebook and one rank.

Through the controller, pushing an array to *n* ranks sends it *n* times from the notebook's
process; here it leaves the notebook once (to rank 0) and MPI spreads it, and ``Gatherv`` brings
rows back to rank 0, which answers once. Plain mpi4py on any communicator.

An array is written once per host (:func:`bcast_value`): by the root on its host, received by
``Bcast`` between one rank per host on the others, and every rank maps its host's copy as its own
writable array, copy-on-write (:mod:`mpiworkbench.core.hostcopy`). With more ranks than cores
(MPICH's ranks busy-poll while they wait), a rank that waits here sleeps instead
(:func:`mpiworkbench.core.mpi.meet_asleep`), leaving the cores to the rank that writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpiworkbench.core import hostcopy, mpi


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype != object


def bcast_value(value: Any, comm, root: int = 0, host: int | None = None) -> Any:
    """*value* of *root* on every rank of *comm*, each rank its own writable copy: a NumPy array
    written once per host (:func:`_spread_by_host`), anything else pickled (``bcast``).

    *host*: this rank's host number, to simulate hosts in tests (default: the ranks that share
    memory, ``Split_type(COMM_TYPE_SHARED)``)."""
    header, copy = None, None
    by_host = comm.size > 1 and hostcopy.available()
    if comm.rank == root:
        if not _is_array(value):
            header = ("object", value)
        else:
            header = ("array", value.shape, value.dtype.str, None)
            native = value.dtype.newbyteorder("=")
            if by_host and value.nbytes:  # written before the ranks meet (the others sleep meanwhile)
                copy = hostcopy.HostCopy(value.nbytes, native, value.shape)
                copy.array[...] = value  # the one write on the root (its read-only, any-order value converted)
                header = (*header[:3], copy.where())
    mpi.meet_asleep(comm)  # the ranks arrive one by one: those waiting sleep, not spin
    header = comm.bcast(header, root)
    if header[0] == "object":
        return header[1]
    _kind, shape, dtype, where = header
    native = np.dtype(dtype).newbyteorder("=")
    if where is None:  # one rank, nothing to copy, or no memory files: every rank a fresh array
        out = np.array(value, dtype=native) if comm.rank == root else np.empty(shape, native)
        if comm.size > 1 and out.nbytes:
            mpi.bcast_bytes(comm, out, root)
        return out
    return _spread_by_host(copy, where, shape, native, comm, root, host)


def _spread_by_host(copy, where: tuple, shape: tuple, native: np.dtype, comm, root: int, host: int | None) -> np.ndarray:
    """The root's host copy (*copy* there, found at *where*) on every rank: on the root's host
    each rank maps it as its own; every other host gets its own copy by ``Bcast`` between one
    rank per host (:func:`hosts`), which its ranks then map (:func:`~mpiworkbench.core.hostcopy.share`)."""
    MPI = mpi.MPI()
    node, leaders, root_here = hosts(comm, root, host)
    nbytes = native.itemsize * int(np.prod(shape, dtype=np.int64))
    if not root_here:
        if node.rank == 0:
            copy = hostcopy.HostCopy(nbytes, native, shape)
        if leaders != MPI.COMM_NULL:
            mpi.bcast_bytes(leaders, copy.array)
        mpi.meet_asleep(node)  # this host's copy is full (its other ranks waited asleep)
        where = node.bcast(copy.where() if node.rank == 0 else None, 0)
    elif leaders != MPI.COMM_NULL and leaders.size > 1:
        mpi.bcast_bytes(leaders, copy.array)  # to the other hosts
    return hostcopy.share(copy, where, node, nbytes, native, shape)


_HOSTS_KEY: list[int] = []


def hosts(comm, root: int = 0, host: int | None = None) -> tuple:
    """``(node, leaders, root_here)`` of *comm*: the ranks of this rank's host (rank 0 the root on
    its host, else the lowest rank), one rank per host (``COMM_NULL`` on the others; the root is
    its rank 0) and whether the root is on this host. Made once per communicator, root and *host*
    (a simulated host number: see :func:`bcast_value`), and kept as an attribute of *comm*: freed
    with it."""
    MPI = mpi.MPI()
    if not _HOSTS_KEY:
        _HOSTS_KEY.append(MPI.Comm.Create_keyval(delete_fn=lambda _comm, _key, made: _free_hosts(made)))
    made = comm.Get_attr(_HOSTS_KEY[0])
    if made is None:
        made = {}
        comm.Set_attr(_HOSTS_KEY[0], made)
    # (every rank must find or make the same entry: a simulation is named by every rank's host)
    entry = (root, None if host is None else tuple(comm.allgather(host)))
    if entry not in made:
        key = 0 if comm.rank == root else comm.rank + 1
        node = comm.Split_type(MPI.COMM_TYPE_SHARED, key) if host is None else comm.Split(host, key)
        leaders = comm.Split(0 if node.rank == 0 else MPI.UNDEFINED, key)
        made[entry] = (node, leaders, node.bcast(comm.rank == root, 0))
    return made[entry]


def _free_hosts(made: dict) -> None:
    if mpi.MPI().Is_finalized():
        return
    for node, leaders, _root_here in made.values():
        node.Free()
        if leaders != mpi.MPI().COMM_NULL:
            leaders.Free()


def row_counts(rows: int, size: int) -> list[int]:
    """How many rows each of *size* ranks gets of *rows*: the first ``rows % size`` one more."""
    return [rows // size + (1 if r < rows % size else 0) for r in range(size)]


def scatter_rows(array: np.ndarray | None, comm, root: int = 0) -> np.ndarray:
    """*root*'s array split by rows (axis 0) over the ranks of *comm* (``Scatterv``; uneven
    splits: the first ranks one row more); every rank returns its rows."""
    header = None
    if comm.rank == root:
        if not _is_array(array) or array.ndim == 0:
            raise ValueError(f"scatter needs a NumPy array of at least one dimension; got {type(array).__name__}")
        header = (array.shape, array.dtype.str)
    mpi.meet_asleep(comm)
    shape, dtype = comm.bcast(header, root)
    counts = row_counts(shape[0], comm.size)
    row = int(np.prod(shape[1:], dtype=np.int64))
    mine = np.empty((counts[comm.rank], *shape[1:]), dtype)
    send = None
    if comm.rank == root:
        sizes = [c * row for c in counts]
        send = [np.array(array, dtype=dtype), sizes, np.cumsum([0, *sizes[:-1]]).tolist(), _datatype(dtype)]
    comm.Scatterv(send, [mine, _datatype(dtype)], root)
    return mine


def gather_rows(local: np.ndarray, comm, root: int = 0) -> np.ndarray | None:
    """Every rank's rows joined on *root* in rank order (``Gatherv``); None on the other ranks.
    The rows must agree in everything but their number."""
    local = np.ascontiguousarray(local, dtype=local.dtype.newbyteorder("="))
    mpi.meet_asleep(comm)
    counts = comm.gather(local.shape[0], root)
    if comm.rank != root:
        comm.Gatherv([local, _datatype(local.dtype.str)], None, root)
        return None
    row = int(np.prod(local.shape[1:], dtype=np.int64))
    out = np.empty((sum(counts), *local.shape[1:]), local.dtype)
    sizes = [c * row for c in counts]
    comm.Gatherv([local, _datatype(local.dtype.str)],
                 [out, sizes, np.cumsum([0, *sizes[:-1]]).tolist(), _datatype(local.dtype.str)], root)
    return out


def _datatype(dtype: str):
    """The MPI datatype of a NumPy dtype, named explicitly (not read from the buffer's format)."""
    return mpi.MPI().Datatype.fromcode(np.dtype(dtype).char)
