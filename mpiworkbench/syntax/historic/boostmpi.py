"""Emulation of **boostmpi** (Python bindings of Boost.MPI) on top of mpi4py — syntax only.

Documented calls (thesis §3.6, Tables 4.2, 4.4–4.11; §6.1.3, §6.2.2)::

    import boostmpi
    comm = boostmpi.world; comm.rank; comm.size
    comm.send(dest, tag=0, value=x); x = comm.recv(source=-1, tag=-1, return_status=False)
    request = comm.isend(dest, tag=0, value=x); request = comm.irecv(source=-1, tag=-1)
    request.wait()                                     # a receive request returns the value
    x = boostmpi.broadcast(comm, x, root)
    x = boostmpi.reduce(comm, x, op, root); x = boostmpi.all_reduce(comm, x, lambda a, b: a + b)
    seq = boostmpi.gather(comm, x, root); seq = boostmpi.all_gather(comm, x)
    x = boostmpi.scatter(comm, values, root); seq = boostmpi.all_to_all(comm, values)
    comm.barrier(); boostmpi.finalize()

Any picklable object travels (Boost.Serialization in the original); reductions take a
Python function (``lambda x, y: x + y``) instead of ``MPI_SUM``; received values are
returned. ``-1`` means "any source/tag", as in the thesis's tables.
"""

from __future__ import annotations

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import communicator, implements
MODULE = "boostmpi"


def __getattr__(name: str):
    if name == "world":
        return Communicator(communicator())
    raise AttributeError(f"module 'boostmpi' (emulation) has no attribute {name!r}")


def _any(value: int, kind: str) -> int:
    MPI = mpi.MPI()
    if value == -1:
        return MPI.ANY_SOURCE if kind == "source" else MPI.ANY_TAG
    return value


def finalize() -> None:
    """A no-op here: mpi4py finalizes MPI at interpreter exit."""


class Status:
    def __init__(self, status):
        self.source = status.Get_source()
        self.tag = status.Get_tag()


class Request:
    """``wait()`` completes the request; for a receive it returns the value."""

    def __init__(self, handle):
        self._handle = handle

    def wait(self):
        return self._handle.wait()


class Communicator:
    """boostmpi's communicator: ``rank`` and ``size`` are attributes."""

    def __init__(self, comm):
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def barrier(self) -> None:
        self._comm.barrier()

    @implements(MODULE, "send", "Table 4.2")
    def send(self, dest, tag=0, value=None):
        self._comm.send(value, dest, tag)

    @implements(MODULE, "recv", "Table 4.2")
    def recv(self, source=-1, tag=-1, return_status=False):
        status = mpi.MPI().Status()
        value = self._comm.recv(None, _any(source, "source"), _any(tag, "tag"), status)
        return (value, Status(status)) if return_status else value

    @implements(MODULE, "isend", "Table 4.4")
    def isend(self, dest, tag=0, value=None):
        return Request(self._comm.isend(value, dest, tag))

    @implements(MODULE, "irecv", "Table 4.4")
    def irecv(self, source=-1, tag=-1):
        return Request(self._comm.irecv(None, _any(source, "source"), _any(tag, "tag")))


def _comm(communicator_obj):
    return communicator_obj._comm


@implements(MODULE, "bcast", "Table 4.5")
def broadcast(comm, value=None, root=0):
    return _comm(comm).bcast(value, root)


@implements(MODULE, "reduce", "Table 4.6")
def reduce(comm, value, op, root=0):
    return _comm(comm).reduce(value, op, root)


@implements(MODULE, "allreduce", "Table 4.7")
def all_reduce(comm, value, op):
    return _comm(comm).allreduce(value, op)


@implements(MODULE, "gather", "Table 4.8")
def gather(comm, value, root=0):
    return _comm(comm).gather(value, root)


@implements(MODULE, "allgather", "Table 4.9")
def all_gather(comm, value):
    return _comm(comm).allgather(value)


@implements(MODULE, "scatter", "Table 4.10")
def scatter(comm, values=None, root=0):
    return _comm(comm).scatter(values, root)


@implements(MODULE, "alltoall", "Table 4.11")
def all_to_all(comm, values):
    return _comm(comm).alltoall(values)


alltoall = all_to_all  #: Table 4.11 writes ``boostmpi.alltoall``
