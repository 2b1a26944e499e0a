"""Whole time steps in JIT code, exchanging with numba-mpi (the wave solver's ``numba-mpi`` exchange).

Mirror, pack, ``numba_mpi.sendrecv``, unpack and update, all inside one ``@njit``
function: no Python between the steps. numba-mpi talks only to ``MPI.COMM_WORLD``, so the
solver allows this exchange only on all of the world in rank order. The update is the
numba kernel of :mod:`mpiworkbench.solvers.wave.kernels`, so the bits are the same.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mpiworkbench.backends import NotSupportedError
from mpiworkbench.backends.numba_mpi import fit_status_buffers, world_in_place_of
from mpiworkbench.core import mpi
from mpiworkbench.solvers.wave.kernels import numba_update_func

#: The compiled whole-step loop (one per process).
_compiled: dict[str, object] = {}

__all__ = ["NumbaMpiStepper", "stepper_on"]


def _numba_mpi_steps_func():
    """Whole time steps in one ``@njit`` function, exchanging with numba-mpi (COMM_WORLD)."""
    if "steps" not in _compiled:
        import numba
        import numba_mpi

        fit_status_buffers()
        update = numba_update_func()

        @numba.njit(cache=True)
        def pack(buf, u, axis, index):  # pragma: no cover - JIT
            if axis == 0:
                buf[:, :] = u[index, 1:-1, 1:-1]
            elif axis == 1:
                buf[:, :] = u[1:-1, index, 1:-1]
            else:
                buf[:, :] = u[1:-1, 1:-1, index]

        @numba.njit(cache=True)
        def unpack(u, buf, axis, index):  # pragma: no cover - JIT
            if axis == 0:
                u[index, 1:-1, 1:-1] = buf
            elif axis == 1:
                u[1:-1, index, 1:-1] = buf
            else:
                u[1:-1, 1:-1, index] = buf

        # not cached on disk: numba-mpi's functions hold ctypes pointers numba cannot cache
        @numba.njit(cache=False)
        def steps(uo, u, un, nsteps, first, coeffs, neighbours, boundary, bufs_x, bufs_y, bufs_z, timing, proc_null):  # pragma: no cover - JIT
            cx2, cy2, cz2, center = coeffs[0], coeffs[1], coeffs[2], coeffs[3]
            shape = u.shape
            for s in range(nsteps):
                t0 = numba_mpi.wtime()
                # Neumann mirror on the physical boundary
                for axis in range(3):
                    n = shape[axis]
                    if boundary[axis, 0]:
                        if axis == 0:
                            u[0, 1:-1, 1:-1] = u[2, 1:-1, 1:-1]
                        elif axis == 1:
                            u[1:-1, 0, 1:-1] = u[1:-1, 2, 1:-1]
                        else:
                            u[1:-1, 1:-1, 0] = u[1:-1, 1:-1, 2]
                    if boundary[axis, 1]:
                        if axis == 0:
                            u[n - 1, 1:-1, 1:-1] = u[n - 3, 1:-1, 1:-1]
                        elif axis == 1:
                            u[1:-1, n - 1, 1:-1] = u[1:-1, n - 3, 1:-1]
                        else:
                            u[1:-1, 1:-1, n - 1] = u[1:-1, 1:-1, n - 3]
                t1 = numba_mpi.wtime()
                # exchange: per axis, up then down; bufs_*[0] send, [1] receive
                for axis in range(3):
                    n = shape[axis]
                    lo = neighbours[axis, 0]
                    hi = neighbours[axis, 1]
                    if axis == 0:
                        bufs = bufs_x
                    elif axis == 1:
                        bufs = bufs_y
                    else:
                        bufs = bufs_z
                    pack(bufs[0], u, axis, n - 2)
                    numba_mpi.sendrecv(bufs[0], hi, bufs[1], lo, 2 * axis, 2 * axis)
                    if lo != proc_null:
                        unpack(u, bufs[1], axis, 0)
                    pack(bufs[0], u, axis, 1)
                    numba_mpi.sendrecv(bufs[0], lo, bufs[1], hi, 2 * axis + 1, 2 * axis + 1)
                    if hi != proc_null:
                        unpack(u, bufs[1], axis, n - 1)
                t2 = numba_mpi.wtime()
                update(un, u, uo, 1, shape[0] - 1, 1, shape[1] - 1, 1, shape[2] - 1, cx2, cy2, cz2, center)
                if first and s == 0:
                    un[1:-1, 1:-1, 1:-1] *= 0.5
                uo, u, un = u, un, uo
                t3 = numba_mpi.wtime()
                timing[0] += (t1 - t0) + (t3 - t2)
                timing[1] += t2 - t1
            return uo, u, un

        _compiled["steps"] = steps
    return _compiled["steps"]


class NumbaMpiStepper:
    """Runs whole steps in JIT code with numba-mpi exchanges (packed faces, ``sendrecv``).

    numba-mpi talks only to ``MPI.COMM_WORLD``; the Cartesian communicator must have the
    same ranks in the same order (``reorder=False`` over the world), which the solver checks.
    """

    def __init__(self, local_shape: Sequence[int], coeffs: Sequence[float], neighbours, boundary, proc_null: int):
        self._func = _numba_mpi_steps_func()
        self.coeffs = np.asarray(coeffs, dtype=np.float64)
        self.neighbours = np.asarray(neighbours, dtype=np.int64).reshape(3, 2)
        self.boundary = np.asarray(boundary, dtype=np.bool_).reshape(3, 2)
        n = [int(s) - 2 for s in local_shape]
        self.bufs = [np.zeros((2, n[1], n[2])), np.zeros((2, n[0], n[2])), np.zeros((2, n[0], n[1]))]
        self.proc_null = int(proc_null)

    def __call__(self, uo, u, un, nsteps: int, first: bool, timing: np.ndarray):
        return self._func(
            uo, u, un, nsteps, first, self.coeffs, self.neighbours, self.boundary, *self.bufs, timing, self.proc_null
        )


def stepper_on(cart, local_shape: Sequence[int], coeffs: Sequence[float]) -> NumbaMpiStepper:
    """The whole-step loop of this rank's block of the Cartesian communicator *cart*.

    Raises ``ValueError`` unless *cart* holds all of ``MPI.COMM_WORLD`` in rank order
    (numba-mpi has no communicator argument).
    """
    MPI = mpi.MPI()
    try:
        world_in_place_of(cart)  # numba-mpi's one rule: the world's ranks, in order
    except NotSupportedError as exc:
        raise ValueError(
            "exchange 'numba-mpi' only works on all of MPI.COMM_WORLD in rank order (numba-mpi "
            "has no communicator argument); use another exchange on a sub-communicator"
        ) from exc
    dims, _, coords = cart.Get_topo()
    neighbours = [cart.Shift(a, 1) for a in range(3)]
    boundary = [(coords[a] == 0, coords[a] == dims[a] - 1) for a in range(3)]
    return NumbaMpiStepper(local_shape, coeffs, neighbours, boundary, MPI.PROC_NULL)
