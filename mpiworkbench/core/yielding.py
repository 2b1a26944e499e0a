"""A rank that has waited in one MPI call for a while gives its core away until the call returns.

MPICH ranks busy-poll while they wait: a rank stopped at a breakpoint, or a deadlock, keeps
every other rank of its world spinning at a full core for as long as it lasts (hours, for a
world kept open), and on a shared machine (a laptop, a class's node) those cores are taken from
everything else. MPICH can yield instead (``MPIR_CVAR_ENABLE_HEAVY_YIELD``: a ``nanosleep`` in
each turn of its progress loop), but yielding in every wait makes communication slower
(``MPIWORKBENCH_YIELD_WHILE_WAITING=1`` asks for that: docs/measurements.md, "The ranks'
environment"). So the rank's reporter thread (:mod:`mpiworkbench.trace.hang`), which watches
the interposer's record of the call the rank is in, turns the yield on once the rank has been
inside one call for :data:`YIELD_AFTER_S`, and off as soon as that call returns: short waits
(every benchmark, every solver step) spin as before.

The switch is the MPI tool interface's control variable (``MPI_T_cvar_write``), written from the
reporter thread while the main thread waits (the ranks run at ``MPI_THREAD_MULTIPLE``, mpi4py's
default; MPICH yields only there). Only MPICH libraries that know the variable (MPICH 4.1 and
later: the ``mpich`` wheel) take it; under another MPI, or when the user set
``MPIR_CVAR_ENABLE_HEAVY_YIELD`` or ``MPIWORKBENCH_YIELD_AFTER_S=0`` themselves, nothing changes.
"""

from __future__ import annotations

import ctypes
import os

#: The MPICH control variable that makes a waiting rank sleep instead of spin.
HEAVY_YIELD = "MPIR_CVAR_ENABLE_HEAVY_YIELD"
#: Seconds a rank waits in one MPI call before it yields (``$MPIWORKBENCH_YIELD_AFTER_S``; 0: never).
#: Longer than any single call of the benchmarks and solvers at the sizes the notebooks use.
YIELD_AFTER_S = 1.0
AFTER_VARIABLE = "MPIWORKBENCH_YIELD_AFTER_S"
#: Seconds between two looks at the rank while it yields: the yield is off again at most this
#: long after the call returned (what follows a long wait, a timed loop say, spins again at once).
YIELDING_POLL_S = 0.01
_THREAD_MULTIPLE = 3  # MPI_THREAD_MULTIPLE in MPICH's ABI


def yield_after_s(env=os.environ) -> float | None:
    """Seconds after which a waiting rank yields; ``None`` when it never should: the user set
    :data:`HEAVY_YIELD` (their choice stands), or ``$MPIWORKBENCH_YIELD_AFTER_S`` is 0. A value
    that is no number of seconds raises :class:`ValueError` naming it (the client checks it
    before it starts any rank: :func:`mpiworkbench.core.launch.rank_environment`)."""
    if HEAVY_YIELD in env:
        return None
    value = env.get(AFTER_VARIABLE, str(YIELD_AFTER_S))
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"{AFTER_VARIABLE}={value!r} is not a number of seconds: set it to the seconds a rank "
                         f"waits in one MPI call before it yields its core (default {YIELD_AFTER_S:g}), "
                         "or to 0 for never") from None
    return seconds if seconds > 0 else None


class Switch:
    """MPICH's yield, turned on and off in this process (:meth:`set`); :func:`switch` makes one."""

    def __init__(self, library: ctypes.CDLL, handle: ctypes.c_void_p):
        self._library, self._handle, self.on = library, handle, False

    def value(self) -> int:
        """The variable as the library holds it now (1: yielding)."""
        value = ctypes.c_int(-1)
        self._library.MPI_T_cvar_read(self._handle, ctypes.byref(value))
        return value.value

    def set(self, on: bool) -> bool:
        """Yield while waiting (*on*) or spin; whether the library took it."""
        if on == self.on:
            return True
        value = ctypes.c_int(int(on))
        if self._library.MPI_T_cvar_write(self._handle, ctypes.byref(value)) != 0:
            return False
        self.on = on
        return True


def switch(library_path: str | None = None) -> Switch | None:
    """A :class:`Switch` for the MPI library this process mapped (*library_path*; default: the one
    :mod:`mpiworkbench.core.mpifiles` finds), or ``None`` when it has no such variable (not MPICH,
    an older MPICH) or no tool interface. Call it once MPI is initialised."""
    if library_path is None:
        from mpiworkbench.core.mpifiles import mpi_files  # (this module stays importable without MPI)

        found = mpi_files()
        if len(found) != 1:
            return None
        library_path = found[0]
    try:
        library = ctypes.CDLL(library_path)
        if hasattr(library, "ompi_mpi_comm_world"):  # Open MPI: no such variable (its tool interface is left alone)
            return None
        provided, index, count = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        if library.MPI_T_init_thread(_THREAD_MULTIPLE, ctypes.byref(provided)) != 0:
            return None
        if library.MPI_T_cvar_get_index(HEAVY_YIELD.encode(), ctypes.byref(index)) != 0:
            return None
        handle = ctypes.c_void_p()
        if library.MPI_T_cvar_handle_alloc(index, None, ctypes.byref(handle), ctypes.byref(count)) != 0:
            return None
    except (OSError, AttributeError):  # not a library, or one without the tool interface
        return None
    return Switch(library, handle)


class WhileWaiting:
    """Fed the reporter's looks at the rank's record (:meth:`look`): turns the yield on once the
    rank has been in one call for *after_s* seconds, off when it left that call."""

    def __init__(self, after_s: float, make=switch):
        self.after_s, self._make, self._switch, self._tried = after_s, make, None, False

    @property
    def yielding(self) -> bool:
        """Whether the rank yields now (its watcher then looks more often: :data:`YIELDING_POLL_S`)."""
        return self._switch is not None and self._switch.on

    def look(self, inside: bool, seconds: float) -> None:
        """*inside*: the rank is in an MPI call, for *seconds* so far."""
        wanted = inside and seconds >= self.after_s
        if self._switch is None:
            if not wanted or self._tried:
                return
            self._tried = True  # one attempt: a library without the variable stays without it
            self._switch = self._make()
            if self._switch is None:
                return
        self._switch.set(wanted)
