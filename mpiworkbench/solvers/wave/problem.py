"""The wave problem of thesis §6.1 without MPI: mesh, stability limit, exact solution.

``u_tt = c²∇²u`` on the unit cube, ``∂u/∂n = 0``, ``u(x,0) = 2cos(πx)cos(πy)cos(πz)``,
``u_t(x,0) = 0``; exact solution ``u = 2cos(πx)cos(πy)cos(πz)cos(√3·π·c·t)``. The mesh has
``NX×NY×NZ`` points including the boundary, ``x_i = i/(NX−1)``.

Also the names a solver accepts (:data:`EXCHANGES`, with the kernels' :data:`KERNELS`)
and :func:`validate`, which checks a solver's arguments before any communication.
Cheap to import: NumPy only (the CLI builds its choices from here).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from mpiworkbench.solvers import halo
from mpiworkbench.solvers.decomposition import axis_name, decompose
from mpiworkbench.solvers.wave.kernels import KERNELS

__all__ = [
    "EXCHANGES", "KERNELS", "MIN_POINTS_PER_RANK", "WHOLE_STEP", "check_plane", "check_steps", "exact_solution", "local_energy", "parse_mesh",
    "stable_dt", "validate",
]

#: Smallest number of points a rank may own along an axis.
MIN_POINTS_PER_RANK = 3
#: Whole-step exchange: mirror, exchange and update in one JIT loop (:mod:`.whole_step`).
WHOLE_STEP = "numba-mpi"
#: Exchange names a solver accepts: the halo module's, plus the whole-step numba-mpi loop.
EXCHANGES = (*halo.EXCHANGES, WHOLE_STEP)


def parse_mesh(mesh: int | Sequence[int] | str) -> tuple[int, int, int]:
    """``65`` → ``(65, 65, 65)``; ``"65,33,17"`` or ``(65, 33, 17)`` as given."""
    if isinstance(mesh, str):
        try:
            parts = [int(p) for p in mesh.split(",")]
        except ValueError:
            raise ValueError(f"mesh must be N or NX,NY,NZ (integers); got {mesh!r}") from None
    elif isinstance(mesh, (int, np.integer)) and not isinstance(mesh, bool):
        parts = [int(mesh)]
    else:
        parts = [int(p) for p in mesh]
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3:
        raise ValueError(f"mesh must be N or NX,NY,NZ; got {len(parts)} numbers {tuple(parts)}")
    for axis, n in enumerate(parts):
        if n < 3:
            raise ValueError(
                f"mesh must have at least 3 points per axis (boundary included); got {n} on axis {axis_name(axis, 3)}"
            )
    return tuple(parts)  # type: ignore[return-value]


def stable_dt(mesh: Sequence[int], c: float = 1.0) -> float:
    """The stability limit ``(1/c)(1/Δx² + 1/Δy² + 1/Δz²)^(−1/2)`` (0.004510… at 129³)."""
    return 1.0 / (c * math.sqrt(sum((n - 1) ** 2 for n in mesh)))


def exact_solution(x, y, z, t: float, c: float = 1.0):
    """``2cos(πx)cos(πy)cos(πz)cos(√3·π·c·t)`` (broadcasting)."""
    return 2.0 * np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z) * math.cos(math.sqrt(3.0) * math.pi * c * t)


def validate(mesh, nprocs: int, dims, cfl, dt, c, kernel: str, exchange: str):
    """Check a solver's arguments; return ``(shape, decomposition, cfl, dt)`` or raise ValueError.

    *dt* ``None`` means ``cfl`` times the stability limit; a given *dt* must not exceed it
    (its ``cfl`` is then ``dt / limit``).
    """
    shape = parse_mesh(mesh)
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}; got {kernel!r}")
    if exchange not in EXCHANGES:
        raise ValueError(f"exchange must be one of {', '.join(EXCHANGES)}; got {exchange!r}")
    if exchange == WHOLE_STEP and kernel != "numba":
        raise ValueError(f"exchange '{WHOLE_STEP}' runs the whole step in numba; use kernel='numba' (got {kernel!r})")
    if not (isinstance(c, (int, float)) and c > 0 and math.isfinite(c)):
        raise ValueError(f"wave speed c must be a positive number; got {c!r}")
    limit = stable_dt(shape, c)
    if dt is None:
        if not (isinstance(cfl, (int, float)) and 0 < cfl <= 1):
            raise ValueError(
                f"cfl is the fraction of the stability limit and must be in (0, 1]; got {cfl!r}"
            )
        dt = cfl * limit
    else:
        if not (isinstance(dt, (int, float)) and dt > 0):
            raise ValueError(f"dt must be a positive number; got {dt!r}")
        if dt > limit:
            raise ValueError(
                f"dt {dt!r} is above the stability limit {limit:.6g} for mesh {'x'.join(map(str, shape))} "
                f"with c={c}; use dt <= {limit:.6g} or give cfl instead"
            )
        cfl = dt / limit
    layout = decompose(shape, nprocs, dims, min_points=MIN_POINTS_PER_RANK)
    return shape, layout, float(cfl), float(dt)


def local_energy(u_now, u_old, ranges, shape, spacing, dt: float, c: float) -> float:
    """One block's share of the discrete energy at ``t − dt/2`` (the sum over blocks is it).

    ``E = ½ Σ w ((uⁿ − uⁿ⁻¹)/dt)² + ½ c² Σ_axes Σ_edges w⊥ (Δuⁿ/h)(Δuⁿ⁻¹/h)``, with
    trapezoidal weights ``w`` (½ on boundary nodes) times the cell volume; edges
    ``(i, i+1)`` belong to the lower node.

    Parameters
    ----------
    u_now, u_old
        Ghosted local blocks of the two time levels, ghosts filled.
    ranges
        The block's global ``(start, stop)`` per axis.
    shape, spacing
        Mesh points and spacing per axis.
    dt, c
        Time step and wave speed.
    """
    weights = []
    for (a, b), n in zip(ranges, shape):
        w = np.ones(b - a)
        if a == 0:
            w[0] = 0.5
        if b == n:
            w[-1] = 0.5
        weights.append(w)
    wx, wy, wz = np.meshgrid(*weights, indexing="ij", sparse=True)
    u, uo = u_now[1:-1, 1:-1, 1:-1], u_old[1:-1, 1:-1, 1:-1]
    kinetic = 0.5 * np.sum(wx * wy * wz * ((u - uo) / dt) ** 2)
    potential = 0.0
    for axis, h in enumerate(spacing):
        # edges (i, i+1) owned by the lower node; the last rank along the axis owns one fewer
        stop = u_now.shape[axis] - (2 if ranges[axis][1] == shape[axis] else 1)
        lower = [slice(1, -1)] * 3
        upper = [slice(1, -1)] * 3
        lower[axis] = slice(1, stop)
        upper[axis] = slice(2, stop + 1)
        du = (u_now[tuple(upper)] - u_now[tuple(lower)]) / h
        duo = (u_old[tuple(upper)] - u_old[tuple(lower)]) / h
        w = [wx, wy, wz]
        w[axis] = 1.0
        potential += 0.5 * c**2 * np.sum(w[0] * w[1] * w[2] * du * duo)
    volume = math.prod(spacing)
    return float((kinetic + potential) * volume)


def check_steps(k) -> None:
    """A step count must be a non-negative integer (raises ValueError)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ValueError(f"steps must be a non-negative integer; got {k!r}")
    if k < 0:
        raise ValueError(f"steps must be a non-negative integer; got {k}")


def check_plane(shape: Sequence[int], axis, index) -> int:
    """The axis number of a plane request (0/1/2 or "x"/"y"/"z"); raises ValueError if off the mesh."""
    names = {"x": 0, "y": 1, "z": 2}
    axis_i = names.get(axis, axis) if isinstance(axis, str) else axis
    if axis_i not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1, 2 or 'x', 'y', 'z'; got {axis!r}")
    n = shape[axis_i]
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
        raise ValueError(f"slice index along {axis_name(axis_i, 3)} must be an integer in 0..{n - 1}; got {index!r}")
    return axis_i
