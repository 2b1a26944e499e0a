"""CG's local vector kernels, compiled by numba: dot products and fused updates.

Each works on this rank's owned entries; the solver sums the dot products with an
allreduce. Single-threaded and fused (one pass over memory where the algorithm allows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["local_dot", "local_dot2", "matvec_5point", "update_fused", "update_p", "update_x_r"]

# Multi-threaded
# BLAS (OpenBLAS daxpy/ddot) was tried first: on a loaded 2-core machine its threads wait
# for each other and one daxpy took milliseconds. "reassoc" lets the reductions vectorise;
# the result is the same from run to run for a given vector length.
_REASSOC = {"reassoc"}


@njit(cache=True, fastmath=_REASSOC)
def local_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``aᵀb`` of this rank's parts (the allreduce sums them)."""
    s = 0.0
    for i in range(a.size):
        s += a[i] * b[i]
    return s


@njit(cache=True, fastmath=_REASSOC)
def update_x_r(x: np.ndarray, r: np.ndarray, p: np.ndarray, v: np.ndarray, alpha: float) -> float:
    """``x += α p``, ``r −= α v``; returns the local ``rᵀr`` of the new ``r``."""
    s = 0.0
    for i in range(x.size):
        x[i] += alpha * p[i]
        ri = r[i] - alpha * v[i]
        r[i] = ri
        s += ri * ri
    return s


@njit(cache=True)
def update_p(p: np.ndarray, r: np.ndarray, beta: float) -> None:
    """``p = r + β p`` in place."""
    for i in range(p.size):
        p[i] = r[i] + beta * p[i]


@njit(cache=True)
def update_fused(p, s, x, r, w, alpha: float, beta: float) -> None:
    """Chronopoulos–Gear: ``p = r + βp``, ``s = w + βs``, ``x += αp``, ``r −= αs`` in one pass."""
    for i in range(p.size):
        pi = r[i] + beta * p[i]
        si = w[i] + beta * s[i]
        p[i] = pi
        s[i] = si
        x[i] += alpha * pi
        r[i] -= alpha * si


@njit(cache=True, fastmath=_REASSOC)
def local_dot2(r: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """``(rᵀr, wᵀr)`` in one pass (the fused variant's single allreduce sums both)."""
    rr = 0.0
    wr = 0.0
    for i in range(r.size):
        rr += r[i] * r[i]
        wr += w[i] * r[i]
    return rr, wr


@njit(cache=True)
def matvec_5point(x, y, mi: int, mj: int, south: int, west: int, east: int, north: int) -> None:
    """``y = A x`` for this rank's ``mi × mj`` rows of the 5-point matrix, *x* its local value
    vector (owned entries row by row, then the ghost strips starting at *south*, *west*,
    *east*, *north*; ``-1`` where the block meets the physical boundary and no entry reads
    a ghost). Each row sums the entries of
    :func:`~mpiworkbench.solvers.cg.poisson.local_matrix` in its CSR order (south, west,
    diagonal, east, north) from 0, as SciPy's CSR product does: bit for bit the same ``y``,
    without reading an index or allocating."""
    for i in range(mi):
        row = i * mj
        for j in range(mj):
            k = row + j
            s = 0.0
            if i > 0:
                s += -1.0 * x[k - mj]
            elif south >= 0:
                s += -1.0 * x[south + j]
            if j > 0:
                s += -1.0 * x[k - 1]
            elif west >= 0:
                s += -1.0 * x[west + i]
            s += 4.0 * x[k]
            if j < mj - 1:
                s += -1.0 * x[k + 1]
            elif east >= 0:
                s += -1.0 * x[east + i]
            if i < mi - 1:
                s += -1.0 * x[k + mj]
            elif north >= 0:
                s += -1.0 * x[north + j]
            y[k] = s
