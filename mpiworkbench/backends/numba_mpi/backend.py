"""``numba-mpi``: every call is made inside an ``@numba.njit`` function.

numba-mpi (GPL-3.0, Derlatka et al. 2024, seed paper 004) calls the MPI C library from
compiled Numba code, so communication can sit inside a jitted time loop. What it cannot
do is reported, not faked (all verified in numba-mpi 1.3's source):

* only ``MPI_COMM_WORLD`` (no communicator argument) — other communicators are refused;
* no ``MPI_Alltoall`` and no ``*v`` (uneven-count) collectives;
* reduction operators ``SUM``, ``MIN``, ``MAX`` only (no ``PROD``);
* dtypes uint8, int32, int64, float64, complex64, complex128 — no float32;
* receive buffers must be contiguous: its ``recv``/``sendrecv`` would stage a strided
  target through an uninitialised array (so a receive from ``PROC_NULL`` writes garbage)
  and its ``irecv`` and collectives assert contiguity; ``isend`` of a strided view would
  send a temporary copy that is freed before the send completes.

The first call of each operation with a new dtype/shape pays Numba's compile time, in every
process: numba-mpi's functions hold ctypes pointers, which Numba cannot cache on disk.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mpiworkbench.backends.base import Backend, BackendUnavailableError, Loop, NotSupportedError, Request
from mpiworkbench.backends.numba_mpi import NAME, UNSUPPORTED, check_world, fit_status_buffers, loops

try:
    import numba
    import numba_mpi
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailableError(
        f"backend 'numba-mpi' is unavailable here: {exc}; to use it: pip install numba numba-mpi"
    ) from exc
fit_status_buffers()

#: NumPy dtypes numba-mpi 1.3 maps to MPI datatypes (numba_mpi/common.py::_MPI_DTYPES).
SUPPORTED_DTYPES = frozenset(
    np.dtype(t) for t in (np.uint8, np.int32, np.int64, np.float64, np.complex64, np.complex128)
)
_OPERATORS = {"sum": numba_mpi.Operator.SUM, "min": numba_mpi.Operator.MIN, "max": numba_mpi.Operator.MAX}


# The calls themselves: each one a compiled function, as a numba-mpi user writes them.
@numba.njit
def _send(data, dest, tag):
    return numba_mpi.send(data, dest, tag)


@numba.njit
def _recv(out, source, tag):
    return numba_mpi.recv(out, source, tag)


@numba.njit
def _sendrecv(data, dest, out, source, sendtag, recvtag):
    return numba_mpi.sendrecv(data, dest, out, source, sendtag, recvtag)


@numba.njit
def _isend(data, dest, tag):
    return numba_mpi.isend(data, dest, tag)


@numba.njit
def _irecv(out, source, tag):
    return numba_mpi.irecv(out, source, tag)


@numba.njit
def _wait(request):
    return numba_mpi.wait(request)


@numba.njit
def _waitall(requests):
    return numba_mpi.waitall(requests)


@numba.njit
def _bcast(data, root):
    return numba_mpi.bcast(data, root)


@numba.njit
def _reduce(data, out, operator, root):
    return numba_mpi.reduce(data, out, operator, root)


@numba.njit
def _allreduce(data, out, operator):
    return numba_mpi.allreduce(data, out, operator)


@numba.njit
def _gather(data, out, count, root):
    return numba_mpi.gather(data, out, count, root)


@numba.njit
def _allgather(data, out, count):
    return numba_mpi.allgather(data, out, count)


@numba.njit
def _scatter(data, out, count, root):
    return numba_mpi.scatter(data, out, count, root)


@numba.njit
def _barrier():
    return numba_mpi.barrier()


@numba.njit
def _wtime():
    return numba_mpi.wtime()


class NumbaMpi(Backend):
    name = NAME
    summary = "numba-mpi: MPI calls inside @numba.njit functions (COMM_WORLD only)"
    unsupported = UNSUPPORTED
    limits = (
        "COMM_WORLD only (numba-mpi issue #64)",
        "reduction operators sum, min, max (no prod)",
        "dtypes uint8, int32, int64, float64, complex64, complex128 (no float32)",
        "contiguous receive buffers; contiguous send buffers for isend and collectives",
    )
    objects = False

    def __init__(self, comm=None):
        super().__init__(comm)
        check_world(self.comm)

    @classmethod
    def make_loop(cls, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
        """The whole loop, timer included, in ``@njit``: see :meth:`Backend.make_loop`."""
        return loops.loop_in_njit(benchmark, comm, mode, window)

    # -- checks (cheap: a set lookup and a flag) ----------------------------------------
    def _contiguous(self, array, operation: str, role: str) -> None:
        self._dtype(array, operation)
        if not array.flags.c_contiguous:
            raise NotSupportedError(
                NAME, f"{operation}: the {role} buffer is not contiguous (shape {array.shape}, strides "
                f"{array.strides}); numba-mpi would stage it through a temporary — pass "
                "numpy.ascontiguousarray(x) and copy back yourself"
            )

    def _dtype(self, array, operation: str) -> None:
        if array.dtype not in SUPPORTED_DTYPES:
            raise NotSupportedError(
                NAME, f"{operation}: dtype {array.dtype} has no MPI datatype in numba-mpi 1.3 "
                f"(supported: {', '.join(sorted(str(d) for d in SUPPORTED_DTYPES))})"
            )

    def _operator(self, op: str):
        try:
            return _OPERATORS[op]
        except KeyError:
            if op == "prod":
                raise NotSupportedError(NAME, "operator prod: numba-mpi 1.3 offers SUM, MIN and MAX only") from None
            raise ValueError(f"unknown reduction op {op!r}; use one of sum, prod, min, max") from None

    def _no_counts(self, counts) -> None:
        if counts is not None:
            raise NotSupportedError(NAME, self.unsupported["counts"])

    @staticmethod
    def _ok(status: int, operation: str) -> None:
        if status:
            raise RuntimeError(f"numba-mpi {operation}: MPI error code {status}")

    def wtime(self) -> float:
        return _wtime()

    def barrier(self) -> None:
        self._ok(_barrier(), "barrier")

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest, tag=0):
        self._dtype(data, "send")
        self._ok(_send(data, dest, tag), "send")

    def recv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError("numba-mpi recv needs out= (a pre-allocated array of the message's shape and dtype)")
        self._contiguous(out, "recv", "receive")
        self._ok(_recv(out, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag), "recv")
        return out

    def sendrecv(self, data, dest, out=None, source=None, sendtag=0, recvtag=None):
        if out is None:
            raise ValueError("numba-mpi sendrecv needs out= (a pre-allocated receive array)")
        self._dtype(data, "sendrecv")
        self._contiguous(out, "sendrecv", "receive")
        status = _sendrecv(data, dest, out, self.ANY_SOURCE if source is None else source,
                           sendtag, self.ANY_TAG if recvtag is None else recvtag)
        self._ok(status, "sendrecv")
        return out

    def isend(self, data, dest, tag=0):
        self._contiguous(data, "isend", "send")
        status, handle = _isend(data, dest, tag)
        self._ok(status, "isend")
        return Request(handle, _Sending(data))

    def irecv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError("numba-mpi irecv needs out= (a pre-allocated receive array)")
        self._contiguous(out, "irecv", "receive")
        status, handle = _irecv(out, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag)
        self._ok(status, "irecv")
        return Request(handle, out)

    def wait(self, request):
        self._ok(_wait(request.handle), "wait")
        return None if isinstance(request.out, _Sending) else request.out

    def waitall(self, requests):
        if not requests:
            return []
        handles = np.concatenate([r.handle for r in requests])
        self._ok(_waitall(handles), "waitall")
        for r, h in zip(requests, handles):
            r.handle[0] = h
        return [None if isinstance(r.out, _Sending) else r.out for r in requests]

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root=0):
        self._contiguous(data, "bcast", "broadcast")
        self._ok(_bcast(data, root), "bcast")
        return data

    def reduce(self, data, op="sum", root=0, out=None):
        operator = self._operator(op)
        self._contiguous(data, "reduce", "send")
        result = out if out is not None else np.empty_like(data)
        self._contiguous(result, "reduce", "receive")
        self._ok(_reduce(data, result, operator, root), "reduce")
        return result if self.rank == root else None

    def allreduce(self, data, op="sum", out=None):
        operator = self._operator(op)
        self._contiguous(data, "allreduce", "send")
        if out is None:
            out = np.empty_like(data)
        self._contiguous(out, "allreduce", "receive")
        self._ok(_allreduce(data, out, operator), "allreduce")
        return out

    def gather(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        self._contiguous(data, "gather", "send")
        result = out if (out is not None and self.rank == root) else np.empty((self.size, *data.shape), data.dtype)
        self._contiguous(result, "gather", "receive")
        self._ok(_gather(data, result, data.size, root), "gather")
        return result if self.rank == root else None

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        self._contiguous(data, "allgather", "send")
        if out is None:
            out = np.empty((self.size, *data.shape), data.dtype)
        self._contiguous(out, "allgather", "receive")
        self._ok(_allgather(data, out, data.size), "allgather")
        return out

    def scatter(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        if out is None:
            raise ValueError("numba-mpi scatter needs out= on every rank (this rank's receive array)")
        self._contiguous(out, "scatter", "receive")
        # numba-mpi reads send_data's dtype on every rank: non-roots pass their receive array.
        send = data if self.rank == root else out
        self._contiguous(send, "scatter", "send")
        self._ok(_scatter(send, out, out.size, root), "scatter")
        return out

    def alltoall(self, data, out=None):
        raise NotSupportedError(NAME, self.unsupported["alltoall"])


class _Sending:
    """Keeps an isend's array alive until the request completes (and marks it a send)."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data
