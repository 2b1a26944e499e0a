"""The one way engine-side code reaches mpi4py, and collective error handling.

Importing this module does not import :mod:`mpi4py`: :func:`MPI` does, on first call
(which also initialises MPI). So a module that only *may* use MPI — the CLI's parsers,
the notebook kernel that is not one of the engines — can import it freely.
:func:`checked` and :func:`raise_on_all_ranks` turn an error on one rank into the same
error on every rank, so bad input never leaves ranks waiting in a collective.
"""

from __future__ import annotations

import os
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: Environment variables that tell a process it was started by an MPI launcher.
_LAUNCHER_VARS = (
    "MPIWORKBENCH_UNDER_MPIEXEC",  # set by mpiworkbench.core.launch
    "PMI_SIZE",  # MPICH / Hydra, Intel MPI, Slurm PMI-1/2
    "PMIX_RANK",  # PMIx (Open MPI 5, Slurm)
    "OMPI_COMM_WORLD_SIZE",  # Open MPI
)


#: ``True`` once this process's first :func:`MPI` passed its checks; the refusal when it failed
#: them (raised again by every later call: a refused rank stays refused).
_started: "bool | Exception" = False


def MPI():
    """Return the ``mpi4py.MPI`` module, importing (and initialising MPI) on first use.

    The first call checks that this rank holds one MPI library, its implementation's
    (:func:`mpiworkbench.core.onempi.check`), before mpi4py loads its library and again after;
    in a rank started by :func:`mpiworkbench.core.launch.run_under_mpiexec`, it also records
    the rank's ``/dev/shm`` files (:func:`mpiworkbench.core.shm.record_footprint`), so that they
    are removed should the rank die without removing them itself, and checks that the world
    has the size the launcher asked for
    (:func:`mpiworkbench.core.implementations.check_world_size`: a launcher and a library
    that do not belong together start one world per rank).
    """
    global _started
    if _started is not True:
        if isinstance(_started, Exception):
            raise _started
        try:
            _start()
        except Exception as exc:
            _started = exc
            raise
        _started = True
    from mpi4py import MPI as _MPI

    return _MPI


def _start() -> None:
    import sys

    from mpiworkbench.core import implementations, onempi, shm  # lazy: importing this module stays os and typing; only the first MPI() uses them

    if "mpi4py.MPI" not in sys.modules:  # before the first MPI call: what is preloaded already
        onempi.check("before its first MPI call")
    from mpi4py import MPI as _MPI

    onempi.check("once mpi4py loaded its library")
    shm.record_footprint()
    # a launcher/library mismatch runs N worlds of 1 rank each: refuse it on every rank
    implementations.check_world_size(_MPI.COMM_WORLD.size, _MPI.Get_library_version())


#: Sleep between tests of a request waited for asleep (seconds): short against a point or a copy.
ASLEEP_POLL_S = 0.001


def wait_asleep(request, poll_s: float = ASLEEP_POLL_S, limit_s: float | None = None) -> bool:
    """Wait for the nonblocking *request* sleeping between tests, instead of spinning as a
    blocking call does under MPICH: with more ranks than cores, a waiting rank leaves its core
    to the ranks that work. Whether it completed: ``False`` once *limit_s* seconds passed
    without (the request is then left pending)."""
    import time

    deadline = None if limit_s is None else time.monotonic() + limit_s
    while not request.Test():
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def meet_asleep(comm, poll_s: float = ASLEEP_POLL_S) -> None:
    """Collective: return when every rank of *comm* has arrived, asleep meanwhile (``Ibarrier``)."""
    wait_asleep(comm.Ibarrier(), poll_s)


def meet_within(comm, seconds: float, poll_s: float = ASLEEP_POLL_S) -> bool:
    """Collective with a limit: whether every rank of *comm* arrived within *seconds*
    (``Ibarrier``, asleep meanwhile). ``False`` when some did not: they are elsewhere (a failure
    on some ranks only); the caller is about to end the world, so the request is left pending."""
    return wait_asleep(comm.Ibarrier(), poll_s, seconds)


def world_running() -> bool:
    """Whether this process has an MPI world that is initialised and not finalised, without
    initialising one (nothing imported ``mpi4py.MPI``: no world)."""
    import sys

    module = sys.modules.get("mpi4py.MPI")
    return module is not None and module.Is_initialized() and not module.Is_finalized()


def bcast_bytes(comm, array, root: int = 0) -> None:
    """``Bcast`` of a contiguous NumPy *array*'s bytes from *root* into every rank's *array* of the
    same size (any dtype, any byte order: no MPI datatype is derived from it)."""
    comm.Bcast([array.reshape(-1).view("u1"), array.nbytes, MPI().BYTE], root)


def world():
    """``MPI.COMM_WORLD``."""
    return MPI().COMM_WORLD


def resolve_comm(comm=None):
    """Return *comm*, or ``MPI.COMM_WORLD`` when it is ``None``."""
    return world() if comm is None else comm


def launched_by_mpiexec() -> bool:
    """Whether this process was started by ``mpiexec``/``srun`` (without initialising MPI)."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def raise_on_all_ranks(comm, error: BaseException | None) -> None:
    """Collective: if any rank has an *error*, raise it on every rank.

    Each rank passes the exception it caught (or ``None``). The first failing rank's
    message is raised everywhere, naming that rank, so bad input never leaves some ranks
    waiting in a collective for a rank that already gave up.
    """
    errors = comm.allgather(None if error is None else (type(error).__name__, str(error)))
    for rank, item in enumerate(errors):
        if item is None:
            continue
        if error is not None:
            raise error
        name, message = item
        exc_type = _EXCEPTIONS.get(name, RuntimeError)
        raise exc_type(f"{message} (raised on rank {rank})")


_EXCEPTIONS: dict[str, type[BaseException]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "KeyError": KeyError,
    "NotImplementedError": NotImplementedError,
    "FileNotFoundError": FileNotFoundError,
    "RuntimeError": RuntimeError,
}


def checked(comm, func: Callable[[], T]) -> T:
    """Collective: run *func* on every rank; if it raises anywhere, raise on every rank.

    Use it around input validation and set-up that precede communication::

        self.layout = checked(comm, lambda: decompose(mesh, comm.size, dims))
    """
    result: Any = None
    error: BaseException | None = None
    try:
        result = func()
    except Exception as exc:  # noqa: BLE001 - re-raised on every rank below
        error = exc
    raise_on_all_ranks(comm, error)
    return result
