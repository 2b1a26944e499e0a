"""Emulation of **pypar** 2.x on top of mpi4py — syntax only (see the package docstring).

Documented calls (thesis §3.1, Tables 4.2–4.10; pypar 2.x ``src/pypar.py``)::

    pypar.size(); pypar.rank(); pypar.finalize()
    pypar.send(x, destination, use_buffer=False, vanilla=False, tag=1, bypass=False)
    x = pypar.receive(source, buffer=None, vanilla=False, tag=1, return_status=False, bypass=False)
    x = pypar.broadcast(x, root)            # arrays in place
    buffer = pypar.reduce(x, op, root, buffer=None)       # arrays only
    buffer = pypar.gather(x, root, buffer=None)           # arrays/strings
    buffer = pypar.scatter(x, root, buffer=None)          # arrays/strings
    pypar.barrier(); pypar.time()

pypar's rule, kept here: a ``send`` with ``use_buffer=True`` (or ``bypass=True``) must be
matched by a ``receive`` with ``buffer=``. pypar had no Sendrecv, no non-blocking calls,
no allreduce and no MPI_PROC_NULL handling (thesis Table 4.1, §4.2).
"""

from __future__ import annotations

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import communicator, implements
MODULE = "pypar"
default_tag = 1
SUM, PROD, MAX, MIN = "sum", "prod", "max", "min"


def _ops():
    MPI = mpi.MPI()
    return {SUM: MPI.SUM, PROD: MPI.PROD, MAX: MPI.MAX, MIN: MPI.MIN}


def size() -> int:
    return communicator().Get_size()


def rank() -> int:
    return communicator().Get_rank()


def get_processor_name() -> str:
    return mpi.MPI().Get_processor_name()


def time() -> float:
    return mpi.MPI().Wtime()


def barrier() -> None:
    communicator().Barrier()


def finalize() -> None:
    """pypar.finalize(): a no-op here — mpi4py finalizes MPI at interpreter exit."""


class Status:
    """What ``receive(..., return_status=True)`` returns with the data."""

    def __init__(self, status, itemsize: int = 1):
        self.source = status.Get_source()
        self.tag = status.Get_tag()
        self.error = status.Get_error()
        self.bytes = status.Get_count()
        self.length = self.bytes // max(itemsize, 1)

    def __repr__(self) -> str:
        return f"Status(source={self.source}, tag={self.tag}, length={self.length})"


@implements(MODULE, "send", "Table 4.2")
def send(x, destination, use_buffer=False, vanilla=False, tag=default_tag, bypass=False):
    comm = communicator()
    if (use_buffer or bypass) and isinstance(x, np.ndarray) and not vanilla:
        comm.Send(np.ascontiguousarray(x), destination, tag)  # raw array: receiver has a buffer
    else:
        comm.send(x, destination, tag)  # pypar's control message + payload, as one pickle


@implements(MODULE, "recv", "Table 4.2")
def receive(source, buffer=None, vanilla=False, tag=default_tag, return_status=False, bypass=False):
    MPI = mpi.MPI()
    comm = communicator()
    status = MPI.Status()
    if buffer is not None and isinstance(buffer, np.ndarray) and not vanilla:
        comm.Recv(buffer, source, tag, status)
        result, itemsize = buffer, buffer.itemsize
    else:
        result, itemsize = comm.recv(None, source, tag, status), 1
    return (result, Status(status, itemsize)) if return_status else result


@implements(MODULE, "bcast", "Table 4.5")
def broadcast(buffer, root=0, vanilla=False, bypass=False):
    comm = communicator()
    if isinstance(buffer, np.ndarray) and not vanilla:
        comm.Bcast(buffer, root)
        return buffer
    return comm.bcast(buffer, root)


def bcast(buffer, root=0):
    """Alias: the thesis's §6.2.2 listing writes ``pypar.bcast``; pypar 2.x names it ``broadcast``."""
    return broadcast(buffer, root)


def _array(x, call: str) -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise TypeError(
            f"pypar.{call} works on numpy arrays only, not {type(x).__name__}: wrap a scalar "
            "as numpy.array(x, 'd') (thesis §2.4: 'pypar.reduce can only perform MPI reduce "
            "operation on array type')"
        )
    return np.ascontiguousarray(x)


@implements(MODULE, "reduce", "Table 4.6")
def reduce(x, op, root=0, buffer=None, vanilla=0, bypass=False):
    x = _array(x, "reduce")
    if buffer is None:
        buffer = np.zeros_like(x)
    communicator().Reduce(x, buffer if communicator().Get_rank() == root else None, _ops()[op], root)
    return buffer


@implements(MODULE, "gather", "Table 4.8")
def gather(x, root=0, buffer=None, vanilla=0):
    x = _array(x, "gather")
    comm = communicator()
    if buffer is None:
        shape = (x.shape[0] * comm.Get_size(), *x.shape[1:]) if x.ndim else (comm.Get_size(),)
        buffer = np.zeros(shape, x.dtype)
    comm.Gather(x, buffer if comm.Get_rank() == root else None, root)
    return buffer


@implements(MODULE, "scatter", "Table 4.10")
def scatter(x, root=0, buffer=None, vanilla=False):
    x = _array(x, "scatter")
    comm = communicator()
    if buffer is None:
        buffer = np.zeros((x.shape[0] // comm.Get_size(), *x.shape[1:]), x.dtype)
    comm.Scatter(x if comm.Get_rank() == root else None, buffer, root)
    return buffer
