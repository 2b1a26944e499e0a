"""``c``: the same operations in C — the reference the thesis measured every module against.

``c_backend.c`` is compiled with the venv's ``mpicc`` on first use (cached, see
:mod:`mpiworkbench.core.cbuild`) and called through ctypes. The communicator is passed as its C
handle (``comm.handle``), so any mpi4py communicator works. Buffers must be contiguous
NumPy arrays of a dtype with an MPI counterpart; anything else is refused with a clear
error (C would otherwise read the wrong memory).

Each call crosses ctypes, which costs many times what mpi4py's compiled wrapper costs per
call (measured: docs/measurements.md, Micro-benchmarks). So this backend is the C
*routines*, not a C *program*: for the physical-limit reference, time whole loops written in C
(:meth:`CBackend.make_loop`, ``loops.c``) rather than this backend called once per message.
"""

from __future__ import annotations

import ctypes
from typing import Sequence

import numpy as np

from mpiworkbench.backends.base import Backend, Loop, Request, noncontiguous_error
from mpiworkbench.backends.c import loops
from mpiworkbench.backends.c.library import c_handle, compiler, load_library
from mpiworkbench.core import mpi

compiler()  # the backend is available where mpi4py's library has its compiler (else: unavailable, and why)


#: NumPy dtype → datatype code of c_backend.c (datatype_of).
_DTYPE_CODES: dict[np.dtype, int] = {
    np.dtype(np.float64): 0,
    np.dtype(np.float32): 1,
    np.dtype(np.int32): 2,
    np.dtype(np.int64): 3,
    np.dtype(np.complex128): 4,
    np.dtype(np.complex64): 5,
    np.dtype(np.uint8): 6,
}
_OP_CODES = {"sum": 0, "prod": 1, "min": 2, "max": 3}
#: How many arrays' addresses a C backend remembers (see CBackend._buf).
_ADDRESS_CACHE = 64


class CBackend(Backend):
    name = "c"
    summary = "the Table 4.1 routines in C (mpicc -O3), called through ctypes: the reference"
    unsupported: dict[str, str] = {}
    limits = (
        "contiguous NumPy arrays of float64, float32, int32, int64, complex128, complex64 or uint8",
    )
    objects = False

    def __init__(self, comm=None):
        super().__init__(comm)
        self._lib = load_library()
        self._comm = c_handle(self.comm)
        MPI = mpi.MPI()
        self._request_dtype = np.intc if MPI._sizeof(MPI.Request) == ctypes.sizeof(ctypes.c_int) else np.uintp
        self._error_string = MPI.Get_error_string
        self._addresses: dict[int, tuple] = {}

    @classmethod
    def make_loop(cls, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
        """Whole timed loops written in C (``loops.c``): see :meth:`Backend.make_loop`."""
        return loops.loop_in_c(benchmark, comm, mode, window)

    # -- helpers -------------------------------------------------------------------------
    def _buf(self, array, operation: str):
        """(address, count, datatype code) of a contiguous NumPy array.

        Halo exchanges and benchmarks pass the same arrays again and again, and asking
        NumPy for an address costs more than the MPI call for small messages; so the
        address of the last arrays seen is cached, holding a reference to each array so
        its id cannot be reused while it is cached.
        """
        entry = self._addresses.get(id(array))
        if entry is not None and entry[0] is array and entry[3] is array.dtype:
            return entry[1], array.size, entry[2]
        try:
            code = _DTYPE_CODES[array.dtype]
            flags = array.flags
        except (AttributeError, KeyError):
            raise TypeError(
                f"c {operation}: needs a NumPy array of one of "
                f"{sorted(str(d) for d in _DTYPE_CODES)}; got {type(array).__name__}"
                f"{' of ' + str(array.dtype) if hasattr(array, 'dtype') else ''}"
            ) from None
        if not flags.c_contiguous:
            raise noncontiguous_error(self.name, operation, array)
        address = array.__array_interface__["data"][0]
        if len(self._addresses) >= _ADDRESS_CACHE:
            del self._addresses[next(iter(self._addresses))]
        self._addresses[id(array)] = (array, address, code, array.dtype)
        return address, array.size, code

    def _check(self, rc: int, operation: str) -> None:
        if rc:
            raise RuntimeError(f"c {operation}: MPI error {rc}: {self._error_string(rc)}")

    def _op(self, op: str) -> int:
        try:
            return _OP_CODES[op]
        except KeyError:
            raise ValueError(f"unknown reduction op {op!r}; use one of {sorted(_OP_CODES)}") from None

    def wtime(self) -> float:
        return self._lib.wb_wtime()

    def barrier(self) -> None:
        self._check(self._lib.wb_barrier(self._comm), "barrier")

    def close(self) -> None:
        """Forget the cached array addresses (releases the references it holds)."""
        self._addresses.clear()

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest, tag=0):
        p, n, dt = self._buf(data, "send")
        self._check(self._lib.wb_send(p, n, dt, dest, tag, self._comm), "send")

    def recv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError("c recv needs out= (a pre-allocated array of the message's shape and dtype)")
        p, n, dt = self._buf(out, "recv")
        rc = self._lib.wb_recv(p, n, dt, self.ANY_SOURCE if source is None else source,
                               self.ANY_TAG if tag is None else tag, self._comm)
        self._check(rc, "recv")
        return out

    def sendrecv(self, data, dest, out=None, source=None, sendtag=0, recvtag=None):
        if out is None:
            raise ValueError("c sendrecv needs out= (a pre-allocated receive array)")
        sp, sn, sdt = self._buf(data, "sendrecv")
        rp, rn, rdt = self._buf(out, "sendrecv")
        if sdt != rdt:
            raise TypeError(f"c sendrecv: send dtype {data.dtype} differs from receive dtype {out.dtype}")
        rc = self._lib.wb_sendrecv(sp, sn, dest, sendtag, rp, rn,
                                   self.ANY_SOURCE if source is None else source,
                                   self.ANY_TAG if recvtag is None else recvtag, sdt, self._comm)
        self._check(rc, "sendrecv")
        return out

    def isend(self, data, dest, tag=0):
        p, n, dt = self._buf(data, "isend")
        handle = np.zeros(1, self._request_dtype)
        self._check(self._lib.wb_isend(p, n, dt, dest, tag, self._comm, handle.ctypes.data), "isend")
        # Keep the array alive with the request: MPI reads it until the send completes.
        return Request(handle, _Pending(data))

    def irecv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError("c irecv needs out= (a pre-allocated receive array)")
        p, n, dt = self._buf(out, "irecv")
        handle = np.zeros(1, self._request_dtype)
        rc = self._lib.wb_irecv(p, n, dt, self.ANY_SOURCE if source is None else source,
                                self.ANY_TAG if tag is None else tag, self._comm, handle.ctypes.data)
        self._check(rc, "irecv")
        return Request(handle, out)

    def wait(self, request):
        self._check(self._lib.wb_wait(request.handle.ctypes.data), "wait")
        out = request.out
        return None if isinstance(out, _Pending) else out

    def waitall(self, requests):
        if not requests:
            return []
        handles = np.concatenate([r.handle for r in requests])
        self._check(self._lib.wb_waitall(len(requests), handles.ctypes.data), "waitall")
        for r, h in zip(requests, handles):
            r.handle[0] = h  # completed requests are MPI_REQUEST_NULL now
        return [None if isinstance(r.out, _Pending) else r.out for r in requests]

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root=0):
        p, n, dt = self._buf(data, "bcast")
        self._check(self._lib.wb_bcast(p, n, dt, root, self._comm), "bcast")
        return data

    def reduce(self, data, op="sum", root=0, out=None):
        sp, n, dt = self._buf(data, "reduce")
        rp = None
        if self.rank == root:
            if out is None:
                out = np.empty_like(data)
            rp = self._buf(out, "reduce")[0]
        else:
            out = None
        self._check(self._lib.wb_reduce(sp, rp, n, dt, self._op(op), root, self._comm), "reduce")
        return out

    def allreduce(self, data, op="sum", out=None):
        sp, n, dt = self._buf(data, "allreduce")
        if out is None:
            out = np.empty_like(data)
        rp = self._buf(out, "allreduce")[0]
        self._check(self._lib.wb_allreduce(sp, rp, n, dt, self._op(op), self._comm), "allreduce")
        return out

    @staticmethod
    def _layout(counts: Sequence[int]):
        counts = np.asarray(counts, dtype=np.intc)
        displs = np.zeros_like(counts)
        np.cumsum(counts[:-1], out=displs[1:])
        return counts, displs

    def gather(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        sp, n, dt = self._buf(data, "gather")
        rp = None
        if self.rank == root:
            if out is None:
                out = (np.empty((self.size, *data.shape), data.dtype) if counts is None
                       else np.empty(int(sum(counts)), data.dtype))
            rp = self._buf(out, "gather")[0]
        else:
            out = None
        if counts is None:
            rc = self._lib.wb_gather(sp, n, rp, dt, root, self._comm)
        else:
            c, d = self._layout(counts)
            rc = self._lib.wb_gatherv(sp, n, rp, c.ctypes.data, d.ctypes.data, dt, root, self._comm)
        self._check(rc, "gather")
        return out

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        sp, n, dt = self._buf(data, "allgather")
        if out is None:
            out = (np.empty((self.size, *data.shape), data.dtype) if counts is None
                   else np.empty(int(sum(counts)), data.dtype))
        rp = self._buf(out, "allgather")[0]
        if counts is None:
            rc = self._lib.wb_allgather(sp, n, rp, dt, self._comm)
        else:
            c, d = self._layout(counts)
            rc = self._lib.wb_allgatherv(sp, n, rp, c.ctypes.data, d.ctypes.data, dt, self._comm)
        self._check(rc, "allgather")
        return out

    def scatter(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        if out is None:
            raise ValueError("c scatter needs out= on every rank (this rank's receive array)")
        rp, n, dt = self._buf(out, "scatter")
        sp = self._buf(data, "scatter")[0] if self.rank == root else None
        if counts is None:
            rc = self._lib.wb_scatter(sp, rp, n, dt, root, self._comm)
        else:
            c, d = self._layout(counts)
            rc = self._lib.wb_scatterv(sp, c.ctypes.data, d.ctypes.data, rp, n, dt, root, self._comm)
        self._check(rc, "scatter")
        return out

    def alltoall(self, data, out=None):
        sp, n, dt = self._buf(data, "alltoall")
        if n % self.size:
            raise ValueError(f"c alltoall: {n} elements do not split into {self.size} equal blocks")
        if out is None:
            out = np.empty_like(data)
        rp = self._buf(out, "alltoall")[0]
        self._check(self._lib.wb_alltoall(sp, rp, n // self.size, dt, self._comm), "alltoall")
        return out


class _Pending:
    """Holds a send buffer alive until its request completes (and marks the request a send)."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data
