"""``numba-mpi``: the backend (:mod:`.backend`) and its ``@njit`` timed loops (:mod:`.loops`).

This face imports neither numba nor mpi4py: it holds what numba-mpi cannot do, so the
backend, its loops and the syntax lessons all say it the same way.
"""

from __future__ import annotations

from mpiworkbench.backends.base import NotSupportedError
from mpiworkbench.core import mpi, onempi

NAME = "numba-mpi"

#: Operations numba-mpi 1.3 lacks entirely, and why.
UNSUPPORTED: dict[str, str] = {
    "alltoall": "numba-mpi 1.3 has no MPI_Alltoall",
    "counts": "numba-mpi 1.3 has no *v collectives (Gatherv, Allgatherv, Scatterv): equal counts only",
}

__all__ = ["NAME", "UNSUPPORTED", "check_world", "fit_status_buffers", "world_in_place_of"]


def check_world(comm, same_ranks: bool = False) -> None:
    """Refuse a communicator numba-mpi cannot talk on: it only knows ``MPI_COMM_WORLD``.

    numba-mpi 1.3 takes no communicator argument (issue #64): every call goes over
    ``MPI_COMM_WORLD``.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The communicator the caller was given.
    same_ranks : bool
        Also accept a communicator with the same ranks in the same order as the world
        (``MPI_CONGRUENT``: a duplicate of it), for code that completes all its messages
        before returning (a timed loop), so talking on the world in its place is safe.

    Raises
    ------
    NotSupportedError
        ``not supported by numba-mpi: only MPI_COMM_WORLD: …``.
    """
    MPI = mpi.MPI()
    if comm == MPI.COMM_WORLD:
        return
    if same_ranks and MPI.Comm.Compare(comm, MPI.COMM_WORLD) == MPI.CONGRUENT:
        return
    raise NotSupportedError(
        NAME,
        "only MPI_COMM_WORLD: numba-mpi 1.3 takes no communicator argument (issue #64); "
        f"this is another communicator ({comm.Get_size()} of the world's {MPI.COMM_WORLD.Get_size()} rank(s)); "
        "use mpi4py-buf or c on a sub-communicator",
    )


def world_in_place_of(comm):
    """``COMM_WORLD``, to talk in place of *comm* when that has the world's ranks in order.

    A solver works on its own communicator (a duplicate, a Cartesian one built with
    ``reorder=False``); numba-mpi can only talk on the world, which is safe exactly when
    *comm* is congruent to it, because then every rank number means the same process.

    Raises
    ------
    NotSupportedError
        When *comm* holds other ranks than the world (see :func:`check_world`).
    """
    check_world(comm, same_ranks=True)
    return mpi.MPI().COMM_WORLD


_status_fixed = False


def fit_status_buffers() -> None:
    """Make numba-mpi's ``MPI_Status`` buffers as large as this MPI library's (idempotent).

    numba-mpi 1.3 allocates 5 ints (20 bytes, MPICH's and Intel MPI's ``MPI_Status``) per
    status for ``recv``, ``sendrecv`` and the ``wait*``/``test*`` calls; Open MPI's is 24 bytes,
    so each call wrote past its buffer (a ``waitall`` of 128 requests: "double free or
    corruption", the rank aborts). Its functions are compiled on first use and read the
    helper from their module then, so it is replaced here before any is called.

    Every caller imports numba-mpi first, so this is also where a rank checks that numba-mpi's
    calls reach mpi4py's library (:func:`mpiworkbench.core.onempi.check_numba_mpi`).
    """
    global _status_fixed
    onempi.check_numba_mpi()
    if _status_fixed:
        return
    _status_fixed = True
    import ctypes
    import importlib

    import numba
    import numpy as np

    MPI = mpi.MPI()
    ints = -(-MPI._sizeof(MPI.Status) // ctypes.sizeof(ctypes.c_int))
    if ints <= 5:
        return

    @numba.njit
    def create_status_buffer(count=1):  # pragma: no cover - JIT
        return np.empty(count * ints, dtype=np.intc)

    for name in ("common", "api.recv", "api.sendrecv", "api.requests"):
        module = importlib.import_module(f"numba_mpi.{name}")
        if hasattr(module, "create_status_buffer"):
            module.create_status_buffer = create_status_buffer
