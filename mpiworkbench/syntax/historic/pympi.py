"""Emulation of **pyMPI** 2.x (``import mpi``) on top of mpi4py — syntax only.

Documented calls (thesis §3.4, Tables 4.2–4.10; pyMPI 2.x ``pyMPI_Externals.h``)::

    mpi.rank; mpi.size; mpi.name                       # attributes, not calls
    mpi.send(message, destination, tag=0)
    message, status = mpi.recv(source=ANY_SOURCE, tag=ANY_TAG)
    message, status = mpi.sendrecv(message, destination, source=ANY_SOURCE, sendtag=0, recvtag=ANY_TAG)
    request = mpi.isend(message, destination, tag=0); request = mpi.irecv(source, tag=ANY_TAG)
    request.wait(); request.message
    value = mpi.bcast(value, root=0); value = mpi.reduce(value, mpi.SUM, root=0)
    value = mpi.allreduce(value, mpi.SUM); seq = mpi.gather(seq, root=0); seq = mpi.allgather(seq)
    part = mpi.scatter(seq, root=0); mpi.barrier(); mpi.time()

Everything is pickled and every call returns the received value (pyMPI's "value return
model"). pyMPI ran in its own interpreter (``mpirun -np 4 pyMPI prog.py``); here it is an
ordinary module. It had no MPI_PROC_NULL handling (thesis §4.2): its listings test for a
missing neighbour themselves.
"""

from __future__ import annotations

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import communicator, implements
MODULE = "pyMPI"
SUM, PROD, MAX, MIN = "sum", "prod", "max", "min"


def __getattr__(name: str):
    # pyMPI exposes rank, size and name as module attributes of the running world.
    if name == "rank":
        return communicator().Get_rank()
    if name == "size":
        return communicator().Get_size()
    if name == "name":
        return mpi.MPI().Get_processor_name()
    if name == "ANY_SOURCE":
        return mpi.MPI().ANY_SOURCE
    if name == "ANY_TAG":
        return mpi.MPI().ANY_TAG
    raise AttributeError(f"module 'mpi' (pyMPI emulation) has no attribute {name!r}")


def _op(op):
    a = np.minimum if op == MIN else np.maximum if op == MAX else None
    if a is not None:
        return lambda x, y: a(x, y)
    MPI = mpi.MPI()
    return {SUM: MPI.SUM, PROD: MPI.PROD}[op]


def _any(value, kind: str) -> int:
    MPI = mpi.MPI()
    if value is None:
        return MPI.ANY_SOURCE if kind == "source" else MPI.ANY_TAG
    return value


class Status:
    """pyMPI's status: ``status.source``, ``status.tag``."""

    def __init__(self, status):
        self.source = status.Get_source()
        self.tag = status.Get_tag()

    def __repr__(self) -> str:
        return f"status(source={self.source}, tag={self.tag})"


class Request:
    """pyMPI's request: ``wait()`` completes it, then ``message`` holds what arrived."""

    def __init__(self, handle):
        self._handle = handle
        self.message = None

    def wait(self):
        self.message = self._handle.wait()
        return self.message


def barrier() -> None:
    communicator().barrier()


def time() -> float:
    return mpi.MPI().Wtime()


@implements(MODULE, "send", "Table 4.2")
def send(message, destination, tag=0):
    communicator().send(message, destination, tag)


@implements(MODULE, "recv", "Table 4.2")
def recv(source=None, tag=None):
    status = mpi.MPI().Status()
    message = communicator().recv(None, _any(source, "source"), _any(tag, "tag"), status)
    return message, Status(status)


@implements(MODULE, "sendrecv", "Table 4.3")
def sendrecv(message, destination, source=None, sendtag=0, recvtag=None):
    status = mpi.MPI().Status()
    received = communicator().sendrecv(message, destination, sendtag, None,
                                       _any(source, "source"), _any(recvtag, "tag"), status)
    return received, Status(status)


@implements(MODULE, "isend", "Table 4.4")
def isend(message, destination, tag=0):
    return Request(communicator().isend(message, destination, tag))


@implements(MODULE, "irecv", "Table 4.4")
def irecv(source=None, tag=None):
    return Request(communicator().irecv(None, _any(source, "source"), _any(tag, "tag")))


@implements(MODULE, "bcast", "Table 4.5")
def bcast(value, root=0):
    return communicator().bcast(value, root)


@implements(MODULE, "reduce", "Table 4.6")
def reduce(value, op, root=0):
    return communicator().reduce(value, _op(op), root)


@implements(MODULE, "allreduce", "Table 4.7")
def allreduce(value, op):
    return communicator().allreduce(value, _op(op))


def _concatenate(pieces):
    if all(isinstance(p, np.ndarray) for p in pieces):
        return np.concatenate(pieces)
    out = []
    for p in pieces:
        out.extend(p)
    return out


@implements(MODULE, "gather", "Table 4.8")
def gather(seq, root=0):
    """Concatenates every rank's sequence on *root* (others get ``None``)."""
    pieces = communicator().gather(seq, root)
    return None if pieces is None else _concatenate(pieces)


@implements(MODULE, "allgather", "Table 4.9")
def allgather(seq):
    return _concatenate(communicator().allgather(seq))


@implements(MODULE, "scatter", "Table 4.10")
def scatter(seq, root=0):
    """Splits *seq* on *root* into ``size`` consecutive, nearly equal parts."""
    comm = communicator()
    pieces = None
    if comm.Get_rank() == root:
        n, p = len(seq), comm.Get_size()
        bounds = [r * n // p for r in range(p + 1)]
        pieces = [seq[bounds[r]:bounds[r + 1]] for r in range(p)]
    return comm.scatter(pieces, root)
