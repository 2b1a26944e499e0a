"""The ``c`` backend's library: ``c_backend.c`` built with the ``mpicc`` of mpi4py's MPI library,
and the communicator handle as C expects it (also used by the C syntax snippets)."""

from __future__ import annotations

import ctypes
from pathlib import Path

from mpiworkbench.backends.base import BackendUnavailableError
from mpiworkbench.core import mpi

SOURCE = Path(__file__).with_name("c_backend.c")

_lib = None


def compiler() -> str:
    """The ``mpicc`` the C backend is built with (the one of mpi4py's library), or a
    :class:`BackendUnavailableError` saying why there is none: the rest of the workbench runs
    without it, and no compiler of another MPI is ever used in its place."""
    from mpiworkbench.core import cbuild  # lazy: cbuild imports subprocess, hashlib and tempfile, which only a build needs

    try:
        return cbuild.find_compiler(mpi=True)
    except (FileNotFoundError, RuntimeError) as exc:
        raise BackendUnavailableError(f"backend 'c' (the C reference, its timed loops and C snippets) is "
                                      f"unavailable here: {exc}") from exc


def load_library():
    """Build (first time) and load the C backend library with typed signatures."""
    global _lib
    if _lib is not None:
        return _lib
    from mpiworkbench.core import cbuild  # lazy: cbuild imports subprocess, hashlib and tempfile, which only a build needs

    try:
        lib = cbuild.load("wbbackend", [SOURCE], mpi=True)
    except (FileNotFoundError, RuntimeError) as exc:
        raise BackendUnavailableError(f"backend 'c' is unavailable here: {exc}") from exc
    MPI = mpi.MPI()
    comm_t = comm_type()
    if lib.wb_sizeof_comm() != MPI._sizeof(MPI.Comm) or lib.wb_sizeof_request() != MPI._sizeof(MPI.Request):
        raise BackendUnavailableError(
            "backend 'c' is unavailable here: the C library was built against a different MPI "
            "than mpi4py uses (handle sizes differ); rebuild mpi4py and mpicc from the same MPI"
        )
    P, I = ctypes.c_void_p, ctypes.c_int
    signatures = {
        "wb_barrier": [comm_t],
        "wb_send": [P, I, I, I, I, comm_t],
        "wb_recv": [P, I, I, I, I, comm_t],
        "wb_sendrecv": [P, I, I, I, P, I, I, I, I, comm_t],
        "wb_isend": [P, I, I, I, I, comm_t, P],
        "wb_irecv": [P, I, I, I, I, comm_t, P],
        "wb_wait": [P],
        "wb_waitall": [I, P],
        "wb_bcast": [P, I, I, I, comm_t],
        "wb_reduce": [P, P, I, I, I, I, comm_t],
        "wb_allreduce": [P, P, I, I, I, comm_t],
        "wb_gather": [P, I, P, I, I, comm_t],
        "wb_gatherv": [P, I, P, P, P, I, I, comm_t],
        "wb_allgather": [P, I, P, I, comm_t],
        "wb_allgatherv": [P, I, P, P, P, I, comm_t],
        "wb_scatter": [P, P, I, I, I, comm_t],
        "wb_scatterv": [P, P, P, P, I, I, I, comm_t],
        "wb_alltoall": [P, P, I, I, comm_t],
    }
    for fname, argtypes in signatures.items():
        func = getattr(lib, fname)
        func.argtypes = argtypes
        func.restype = ctypes.c_int
    lib.wb_wtime.restype = ctypes.c_double
    lib.wb_wtime.argtypes = []
    _lib = lib
    return lib


def comm_type() -> type:
    """The ctypes type of an ``MPI_Comm`` argument (``c_int`` for MPICH, a pointer otherwise)."""
    MPI = mpi.MPI()
    return ctypes.c_int if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int) else ctypes.c_void_p


def c_handle(comm) -> int:
    """The communicator's C handle as a C function taking ``MPI_Comm`` expects it.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm

    Returns
    -------
    int
        ``comm.handle``, as a signed int where ``MPI_Comm`` is an int (MPICH); pass it as
        :func:`comm_type`.
    """
    MPI = mpi.MPI()
    handle = comm.handle
    if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int):
        handle &= 0xFFFFFFFF
        if handle >= 2**31:
            handle -= 2**32
    return handle
