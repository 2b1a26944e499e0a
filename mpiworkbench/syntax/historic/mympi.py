"""Emulation of **MYMPI** (pydusa; ``import mpi``) on top of mpi4py — syntax only.

Documented calls (thesis §3.3, Tables 4.2, 4.5, 4.6, 4.8, 4.10, 4.11; §6.1.3, §6.2.2)::

    sys.argv = mpi.mpi_init(len(sys.argv), sys.argv); mpi.mpi_finalize()
    comm = mpi.MPI_COMM_WORLD
    mpi.mpi_comm_rank(comm); mpi.mpi_comm_size(comm)
    mpi.mpi_send(buf, count, mpi.MPI_DOUBLE, dest, tag, comm)
    x = mpi.mpi_recv(count, mpi.MPI_DOUBLE, source, tag, comm)          # returns the data
    x = mpi.mpi_bcast(buf, count, mpi.MPI_DOUBLE, root, comm)
    x = mpi.mpi_reduce(buf, count, mpi.MPI_DOUBLE, mpi.MPI_SUM, root, comm)
    x = mpi.mpi_gather(sbuf, scount, stype, rcount, rtype, root, comm)
    x = mpi.mpi_scatter(sbuf, scount, stype, rcount, rtype, root, comm)
    x = mpi.mpi_alltoall(sbuf, scount, stype, rcount, rtype, comm)
    mpi.mpi_barrier(comm); mpi.mpi_wtime()

C-style: explicit counts and datatypes, received values returned rather than stored in a
buffer; scalars and numerical arrays only. Sendrecv, non-blocking calls and allreduce
are absent (thesis Table 4.1). Like the thesis observed, a receive from
``MPI_PROC_NULL`` returns ``count`` zeros instead of leaving data untouched (§6.1.3).
"""

from __future__ import annotations

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import communicator, implements
MODULE = "MYMPI"
MPI_DOUBLE, MPI_FLOAT, MPI_INT, MPI_LONG, MPI_CHAR = "d", "f", "i", "l", "c"
MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN = "sum", "prod", "max", "min"
_DTYPES = {MPI_DOUBLE: np.float64, MPI_FLOAT: np.float32, MPI_INT: np.int32, MPI_LONG: np.int64, MPI_CHAR: np.uint8}


def __getattr__(name: str):
    if name == "MPI_COMM_WORLD":
        return communicator()
    if name == "MPI_PROC_NULL":
        return mpi.MPI().PROC_NULL
    if name == "MPI_ANY_SOURCE":
        return mpi.MPI().ANY_SOURCE
    raise AttributeError(f"module 'mpi' (MYMPI emulation) has no attribute {name!r}")


def _buf(buf, count: int, datatype: str) -> np.ndarray:
    array = np.ascontiguousarray(buf, dtype=_DTYPES[datatype]).reshape(-1)
    if array.size < count:
        raise ValueError(f"MYMPI: count {count} is larger than the {array.size} values given")
    return array[:count]


def _op(op):
    MPI = mpi.MPI()
    return {MPI_SUM: MPI.SUM, MPI_PROD: MPI.PROD, MPI_MAX: MPI.MAX, MPI_MIN: MPI.MIN}[op]


def mpi_init(argc, argv):
    """MYMPI needs an explicit init; mpi4py already initialised MPI. Returns *argv*."""
    return argv


def mpi_finalize() -> None:
    """A no-op here: mpi4py finalizes MPI at interpreter exit."""


def mpi_comm_rank(comm) -> int:
    return comm.Get_rank()


def mpi_comm_size(comm) -> int:
    return comm.Get_size()


def mpi_barrier(comm) -> None:
    comm.Barrier()


def mpi_wtime() -> float:
    return mpi.MPI().Wtime()


@implements(MODULE, "send", "Table 4.2")
def mpi_send(buf, count, datatype, dest, tag, comm):
    comm.Send(_buf(buf, count, datatype), dest, tag)


@implements(MODULE, "recv", "Table 4.2")
def mpi_recv(count, datatype, source, tag, comm):
    out = np.zeros(count, _DTYPES[datatype])
    comm.Recv(out, source, tag)
    return out


@implements(MODULE, "bcast", "Table 4.5")
def mpi_bcast(buf, count, datatype, root, comm):
    out = _buf(buf, count, datatype).copy() if comm.Get_rank() == root else np.zeros(count, _DTYPES[datatype])
    comm.Bcast(out, root)
    return out


@implements(MODULE, "reduce", "Table 4.6")
def mpi_reduce(buf, count, datatype, op, root, comm):
    """Returns the reduced array on *root*; other ranks get ``None``."""
    out = np.zeros(count, _DTYPES[datatype]) if comm.Get_rank() == root else None
    comm.Reduce(_buf(buf, count, datatype), out, _op(op), root)
    return out


@implements(MODULE, "gather", "Table 4.8")
def mpi_gather(sendbuf, sendcount, sendtype, recvcount, recvtype, root, comm):
    out = np.zeros(recvcount * comm.Get_size(), _DTYPES[recvtype]) if comm.Get_rank() == root else None
    comm.Gather(_buf(sendbuf, sendcount, sendtype), out, root)
    return out


@implements(MODULE, "scatter", "Table 4.10")
def mpi_scatter(sendbuf, sendcount, sendtype, recvcount, recvtype, root, comm):
    out = np.zeros(recvcount, _DTYPES[recvtype])
    send = _buf(sendbuf, sendcount * comm.Get_size(), sendtype) if comm.Get_rank() == root else None
    comm.Scatter(send, out, root)
    return out


@implements(MODULE, "alltoall", "Table 4.11")
def mpi_alltoall(sendbuf, sendcount, sendtype, recvcount, recvtype, comm):
    out = np.zeros(recvcount * comm.Get_size(), _DTYPES[recvtype])
    comm.Alltoall(_buf(sendbuf, sendcount * comm.Get_size(), sendtype), out)
    return out
