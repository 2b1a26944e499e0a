"""``mpi4py-obj``: mpi4py's lower-case methods, which pickle any Python object.

Convenient (lists, dicts, arrays of any layout, scalars all travel) and slower for large
arrays: every message is serialised, copied and unpickled into a new object. Given an
``out`` array the received value is copied into it, so scripts written for the buffer
backends run here unchanged.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mpiworkbench.backends.base import Request
from mpiworkbench.backends.mpi4py import Mpi4pyBackend
from mpiworkbench.core import mpi


def _min(x, y):
    return np.minimum(x, y) if isinstance(x, np.ndarray) else min(x, y)


def _max(x, y):
    return np.maximum(x, y) if isinstance(x, np.ndarray) else max(x, y)


class Mpi4pyObject(Mpi4pyBackend):
    name = "mpi4py-obj"
    summary = "mpi4py lower-case methods: send/recv/bcast/… on any picklable object"
    unsupported: dict[str, str] = {}
    limits = ("every message is pickled: extra copies for large arrays",)
    objects = True
    flavour = "obj"

    def __init__(self, comm=None):
        super().__init__(comm)
        MPI = mpi.MPI()
        # MPI.MIN/MAX on objects call Python's min()/max(), which cannot compare arrays
        # element by element; NumPy's minimum/maximum do, for arrays and scalars alike.
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "min": _min, "max": _max}
        self._waitall = MPI.Request.waitall

    @staticmethod
    def _into(out, value):
        """Copy *value* into *out* when both exist; return what the caller should get."""
        if out is None:
            return value
        if value is not None:  # None: the message came from PROC_NULL, out stays as it was
            np.copyto(out, value)
        return out

    def barrier(self) -> None:
        self.comm.barrier()

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest, tag=0):
        self.comm.send(data, dest, tag)

    def recv(self, out=None, source=None, tag=None):
        value = self.comm.recv(None, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag)
        return self._into(out, value)

    def sendrecv(self, data, dest, out=None, source=None, sendtag=0, recvtag=None):
        value = self.comm.sendrecv(
            data, dest, sendtag, None,
            self.ANY_SOURCE if source is None else source,
            self.ANY_TAG if recvtag is None else recvtag,
        )
        return self._into(out, value)

    def isend(self, data, dest, tag=0):
        return Request(self.comm.isend(data, dest, tag), None)

    def irecv(self, out=None, source=None, tag=None):
        handle = self.comm.irecv(None, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag)
        # Mark receives so wait() can tell "received None/PROC_NULL" from "was a send".
        return Request(handle, out if out is not None else _NO_OUT)

    def wait(self, request):
        value = request.handle.wait()
        return self._finish(request, value)

    def waitall(self, requests):
        values = self._waitall([r.handle for r in requests])
        return [self._finish(r, v) for r, v in zip(requests, values)]

    def _finish(self, request, value):
        out = request.out
        if out is None:  # a send
            return None
        if out is _NO_OUT:
            return value
        return self._into(out, value)

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root=0):
        value = self.comm.bcast(data, root)
        if self.rank != root and isinstance(data, np.ndarray):
            np.copyto(data, value)
            return data
        return value

    def reduce(self, data, op="sum", root=0, out=None):
        value = self.comm.reduce(data, self._op(op), root)
        return self._into(out, value) if self.rank == root else None

    def allreduce(self, data, op="sum", out=None):
        return self._into(out, self.comm.allreduce(data, self._op(op)))

    def gather(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        values = self.comm.gather(data, root)
        if self.rank != root:
            return None
        return self._stack(values, out, counts)

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        return self._stack(self.comm.allgather(data), out, counts)

    @staticmethod
    def _stack(values: list, out, counts):
        if counts is not None:
            return np.concatenate([np.ravel(v) for v in values], out=out)
        if out is not None:
            return np.stack(values, out=out)
        return values

    def scatter(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        pieces = None
        if self.rank == root:
            if counts is not None:
                pieces = np.split(np.ravel(data), np.cumsum(counts)[:-1])
            else:
                pieces = list(data)
                if len(pieces) != self.size:
                    raise ValueError(f"{self.name} scatter: root needs {self.size} items (one per rank); got {len(pieces)}")
        return self._into(out, self.comm.scatter(pieces, root))

    def alltoall(self, data, out=None):
        values = self.comm.alltoall(list(data))
        if out is not None:
            return np.stack(values, out=out)
        return values


class _NoOut:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<no out buffer>"


_NO_OUT = _NoOut()
