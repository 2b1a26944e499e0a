"""``mpi4py-buf``: mpi4py's upper-case buffer methods (NumPy arrays, MPI datatypes).

The data move straight from the array's memory, as in C: no pickling, no copies. The
receiver owns a pre-allocated buffer of the right shape and dtype. Arrays must be
contiguous (mpi4py asks for a contiguous buffer); a strided view is refused with a clear
error — pack it or describe it with a derived datatype.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mpiworkbench.backends.base import Request, first_strided, noncontiguous_error
from mpiworkbench.backends.mpi4py import Mpi4pyBackend
from mpiworkbench.core import mpi


class Mpi4pyBuffer(Mpi4pyBackend):
    name = "mpi4py-buf"
    summary = "mpi4py upper-case methods: Send/Recv/Bcast/… on NumPy buffers"
    unsupported: dict[str, str] = {}
    limits = ("contiguous buffers only (use derived datatypes for strided layouts)",)
    objects = False
    flavour = "buf"

    def __init__(self, comm=None):
        super().__init__(comm)
        MPI = mpi.MPI()
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
        self._waitall = MPI.Request.Waitall

    def barrier(self) -> None:
        self.comm.Barrier()

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest, tag=0):
        try:
            self.comm.Send(data, dest, tag)
        except BufferError:
            raise noncontiguous_error(self.name, "send", data) from None

    def recv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError(f"{self.name} recv needs out= (a pre-allocated array of the message's shape and dtype)")
        try:
            self.comm.Recv(out, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag)
        except BufferError:
            raise noncontiguous_error(self.name, "recv", out) from None
        return out

    def sendrecv(self, data, dest, out=None, source=None, sendtag=0, recvtag=None):
        if out is None:
            raise ValueError(f"{self.name} sendrecv needs out= (a pre-allocated receive array)")
        try:
            self.comm.Sendrecv(
                data, dest, sendtag, out,
                self.ANY_SOURCE if source is None else source,
                self.ANY_TAG if recvtag is None else recvtag,
            )
        except BufferError:
            raise noncontiguous_error(self.name, "sendrecv", first_strided(data, out)) from None
        return out

    def isend(self, data, dest, tag=0):
        try:
            return Request(self.comm.Isend(data, dest, tag))
        except BufferError:
            raise noncontiguous_error(self.name, "isend", data) from None

    def irecv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError(f"{self.name} irecv needs out= (a pre-allocated receive array)")
        try:
            handle = self.comm.Irecv(out, self.ANY_SOURCE if source is None else source, self.ANY_TAG if tag is None else tag)
        except BufferError:
            raise noncontiguous_error(self.name, "irecv", out) from None
        return Request(handle, out)

    def wait(self, request):
        request.handle.Wait()
        return request.out

    def waitall(self, requests):
        self._waitall([r.handle for r in requests])
        return [r.out for r in requests]

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root=0):
        try:
            self.comm.Bcast(data, root)
        except BufferError:
            raise noncontiguous_error(self.name, "bcast", data) from None
        return data

    def reduce(self, data, op="sum", root=0, out=None):
        if self.rank == root:
            if out is None:
                out = np.empty_like(data)
        else:
            out = None
        try:
            self.comm.Reduce(data, out, self._op(op), root)
        except BufferError:
            raise noncontiguous_error(self.name, "reduce", data) from None
        return out

    def allreduce(self, data, op="sum", out=None):
        if out is None:
            out = np.empty_like(data)
        try:
            self.comm.Allreduce(data, out, self._op(op))
        except BufferError:
            raise noncontiguous_error(self.name, "allreduce", data) from None
        return out

    def _gathered(self, data, counts):
        """A new result array of gather/allgather: ``(size, *data.shape)``, or flat with *counts*."""
        if counts is None:
            return np.empty((self.size, *data.shape), data.dtype)
        return np.empty(int(sum(counts)), data.dtype)

    def gather(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        data = np.asarray(data)
        recv = None
        if self.rank == root:
            if out is None:
                out = self._gathered(data, counts)
            recv = out if counts is None else [out, list(counts)]
        else:
            out = None
        try:
            if counts is None:
                self.comm.Gather(data, recv, root)
            else:
                self.comm.Gatherv(data, recv, root)
        except BufferError:
            raise noncontiguous_error(self.name, "gather", data) from None
        return out

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        data = np.asarray(data)
        if out is None:
            out = self._gathered(data, counts)
        try:
            if counts is None:
                self.comm.Allgather(data, out)
            else:
                self.comm.Allgatherv(data, [out, list(counts)])
        except BufferError:
            raise noncontiguous_error(self.name, "allgather", data) from None
        return out

    def scatter(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        if out is None:
            raise ValueError(f"{self.name} scatter needs out= on every rank (this rank's receive array)")
        send = None
        if self.rank == root:
            send = data if counts is None else [data, list(counts)]
        try:
            if counts is None:
                self.comm.Scatter(send, out, root)
            else:
                self.comm.Scatterv(send, out, root)
        except BufferError:
            raise noncontiguous_error(self.name, "scatter", out) from None
        return out

    def alltoall(self, data, out=None):
        if out is None:
            out = np.empty_like(data)
        try:
            self.comm.Alltoall(data, out)
        except BufferError:
            raise noncontiguous_error(self.name, "alltoall", data) from None
        return out
