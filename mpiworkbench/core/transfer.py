"""Arrays spread from one rank to all and collected back by MPI: what ``wb.push``, ``wb.scatter``
and ``wb.collect`` run on the ranks after one transfer between the notebook and one rank.

Through the controller, pushing an array to *n* ranks sends it *n* times from the notebook's
process; here it leaves the notebook once (to rank 0) and MPI spreads it (``Bcast``, or
``Scatterv`` by rows), and ``Gatherv`` brings rows back to rank 0, which answers once.
Plain mpi4py on any communicator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpiworkbench.core import mpi


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype != object


def bcast_value(value: Any, comm, root: int = 0) -> Any:
    """*value* of *root* on every rank of *comm*: a NumPy array by ``Bcast`` (its shape and
    dtype first), anything else pickled (``bcast``)."""
    header, out = None, None
    if comm.rank == root:
        header = ("array", value.shape, value.dtype.str) if _is_array(value) else ("object", value)
        # a fresh, writable array in native order (an array received through ipyparallel is
        # read-only, and its buffer may say '=d', which mpi4py does not map), copied before the
        # ranks meet: the others wait (busy-polling, with MPICH) while the root works
        out = np.array(value, dtype=value.dtype.newbyteorder("=")) if header[0] == "array" else None
    header = comm.bcast(header, root)
    if header[0] == "object":
        return header[1]
    _kind, shape, dtype = header
    if comm.rank != root:
        out = np.empty(shape, np.dtype(dtype).newbyteorder("="))
    comm.Bcast([out, _datatype(dtype)], root)
    return out


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
