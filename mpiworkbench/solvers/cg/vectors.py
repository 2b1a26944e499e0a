"""CG's local vector kernels, compiled by numba: dot products and fused updates.

Each works on this rank's owned entries; the solver sums the dot products with an
allreduce. Single-threaded and fused (one pass over memory where the algorithm allows).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["local_dot", "local_dot2", "update_fused", "update_p", "update_x_r"]

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
