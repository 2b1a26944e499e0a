"""Emulation of **Scientific.MPI** (ScientificPython) on top of mpi4py — syntax only.

Documented calls (thesis §3.5, Tables 4.2, 4.4–4.7; ScientificPython ``Scientific/MPI/core.py``)::

    from Scientific import MPI
    comm = MPI.world.duplicate(); comm.rank; comm.size
    comm.send(data, destination, tag)
    data, source, tag, count = comm.receive(array_or_typecode, source=None, tag=None)
    request = comm.nonblockingSend(data, destination, tag)
    request = comm.nonblockingReceive(array, source=None, tag=None); request.wait()
    comm.broadcast(array, root)                        # in place
    comm.reduce(sendbuffer, receivebuffer, MPI.sum, root)
    comm.allreduce(sendbuffer, receivebuffer, MPI.sum)
    comm.share(send, receive)                          # ~ allgather
    comm.barrier()

Only strings and NumPy arrays travel (collectives: arrays only); receive buffers are
pre-allocated. It ran in its own interpreter, ``mpipython``.
"""

from __future__ import annotations

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import communicator, implements
MODULE = "Scientific.MPI"
sum, prod, max, min = "sum", "prod", "max", "min"  # noqa: A001 - Scientific.MPI's names


def __getattr__(name: str):
    if name == "world":
        return MPICommunicator(communicator())
    raise AttributeError(f"module 'Scientific.MPI' (emulation) has no attribute {name!r}")


def _mpi():
    return mpi.MPI()


def _array(x, call: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"Scientific.MPI {call} takes numerical arrays only, not {type(x).__name__}: "
            "convert with numpy.array(x, 'd') (thesis §3.5 and §6.2.2)"
        )
    return x


class MPIRequest:
    """A non-blocking operation; ``wait()`` completes it (a receive returns the receive tuple)."""

    def __init__(self, handle, buffer=None):
        self._handle, self._buffer = handle, buffer

    def wait(self):
        status = _mpi().Status()
        self._handle.Wait(status)
        if self._buffer is None:
            return None
        return self._buffer, status.Get_source(), status.Get_tag(), self._buffer.size


class MPICommunicator:
    """Scientific.MPI's communicator object (rank and size are attributes)."""

    def __init__(self, comm):
        self._comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()

    def duplicate(self) -> "MPICommunicator":
        return MPICommunicator(self._comm.Dup())

    def barrier(self) -> None:
        self._comm.Barrier()

    @implements(MODULE, "send", "Table 4.2")
    def send(self, data, destination, tag):
        if isinstance(data, str):
            data = np.frombuffer(data.encode(), dtype=np.uint8)
        self._comm.Send(np.ascontiguousarray(_array(data, "send")), destination, tag)

    @implements(MODULE, "recv", "Table 4.2")
    def receive(self, buffer, source=None, tag=None):
        """``buffer``: an array to fill or a typecode ('d', 'i', …) for a new array."""
        MPI = _mpi()
        status = MPI.Status()
        self._comm.Probe(MPI.ANY_SOURCE if source is None else source, MPI.ANY_TAG if tag is None else tag, status)
        if isinstance(buffer, np.ndarray):
            target = buffer if buffer.flags.c_contiguous else np.empty_like(buffer)
        else:
            dtype = np.dtype(buffer)
            target = np.empty(status.Get_count(MPI.BYTE) // dtype.itemsize, dtype)
        self._comm.Recv(target, status.Get_source(), status.Get_tag())
        if target is not buffer and isinstance(buffer, np.ndarray):
            buffer[...] = target
            target = buffer
        return target, status.Get_source(), status.Get_tag(), target.size

    @implements(MODULE, "isend", "Table 4.4")
    def nonblockingSend(self, data, destination, tag):
        return MPIRequest(self._comm.Isend(np.ascontiguousarray(_array(data, "nonblockingSend")), destination, tag))

    @implements(MODULE, "irecv", "Table 4.4")
    def nonblockingReceive(self, array, source=None, tag=None):
        MPI = _mpi()
        handle = self._comm.Irecv(_array(array, "nonblockingReceive"),
                                  MPI.ANY_SOURCE if source is None else source,
                                  MPI.ANY_TAG if tag is None else tag)
        return MPIRequest(handle, array)

    @implements(MODULE, "bcast", "Table 4.5")
    def broadcast(self, array, root):
        self._comm.Bcast(_array(array, "broadcast"), root)

    def _op(self, op):
        MPI = _mpi()
        return {sum: MPI.SUM, prod: MPI.PROD, max: MPI.MAX, min: MPI.MIN}[op]

    @implements(MODULE, "reduce", "Table 4.6")
    def reduce(self, sendbuffer, receivebuffer, operation, root):
        self._comm.Reduce(_array(sendbuffer, "reduce"), _array(receivebuffer, "reduce"), self._op(operation), root)

    @implements(MODULE, "allreduce", "Table 4.7")
    def allreduce(self, sendbuffer, receivebuffer, operation):
        self._comm.Allreduce(_array(sendbuffer, "allreduce"), _array(receivebuffer, "allreduce"), self._op(operation))

    def share(self, send, receive):
        """Every rank's *send* array, stacked into *receive* (MPI_Allgather; not in Table 4.9)."""
        self._comm.Allgather(_array(send, "share"), _array(receive, "share"))
