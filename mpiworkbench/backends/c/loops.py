"""Timed loops of the ``c`` backend: ``loops.c`` built via cbuild with the ``mpicc`` of mpi4py's library.

The whole loop, timer included, runs in C; Python only calls it once per timed loop.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from mpiworkbench.backends.base import Loop
from mpiworkbench.backends.c.library import compiler
from mpiworkbench.core import cbuild

SOURCE = Path(__file__).with_name("loops.c")

#: Operation codes of ``wb_collective`` (the enum in loops.c).
COLLECTIVE_CODES = {
    "bcast": 0, "reduce": 1, "allreduce": 2, "alltoall": 3, "gather": 4, "scatter": 5,
    "allgather": 6, "barrier": 7, "bcast_linear": 8, "bcast_binomial": 9,
}


def library() -> ctypes.CDLL:
    """Build (first time) and load ``loops.c`` with typed signatures (each loop returns seconds)."""
    compiler()  # none of mpi4py's library: the backend is unavailable (and says why), never another MPI's
    lib = cbuild.load("wbbench", [SOURCE])
    ptr, i, d = ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.wb_pingpong.argtypes = [i, ptr, ptr, i, i, i]
    lib.wb_window.argtypes = [i, ptr, ptr, i, i, i, i, i]
    lib.wb_sendrecv.argtypes = [i, ptr, ptr, i, i, i]
    lib.wb_ring.argtypes = [i, ptr, ptr, i, i, i]
    lib.wb_collective.argtypes = [i, i, ptr, ptr, i, i, i, i]
    for fn in (lib.wb_pingpong, lib.wb_window, lib.wb_sendrecv, lib.wb_ring, lib.wb_collective):
        fn.restype = d
    return lib


def loop_in_c(benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
    """The C loop of *benchmark* (arguments as :meth:`mpiworkbench.backends.Backend.make_loop`)."""
    lib = library()
    fcomm = comm.py2f()
    per_call = 1 if mode == "osu" else 0

    def ptrs(buffers: Any):
        return buffers.send.ctypes.data, buffers.recv.ctypes.data

    if benchmark == "pingpong":
        return lambda b, n, it, wu: lib.wb_pingpong(fcomm, *ptrs(b), n, it, wu)
    if benchmark in ("bw", "bibw"):
        bidir = 1 if benchmark == "bibw" else 0
        return lambda b, n, it, wu: lib.wb_window(fcomm, *ptrs(b), n, it, wu, window, bidir)
    if benchmark == "sendrecv":
        return lambda b, n, it, wu: lib.wb_sendrecv(fcomm, *ptrs(b), n, it, wu)
    if benchmark == "ring":
        return lambda b, n, it, wu: lib.wb_ring(fcomm, *ptrs(b), n, it, wu)
    code = COLLECTIVE_CODES[benchmark]
    return lambda b, n, it, wu: lib.wb_collective(fcomm, code, *ptrs(b), n, it, wu, per_call)
