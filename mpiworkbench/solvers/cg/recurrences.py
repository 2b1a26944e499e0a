"""The CG recurrences a :class:`~mpiworkbench.solvers.cg.solver.CGSolver` steps, one per variant.

:class:`Classic` is Hestenes–Stiefel CG (variants ``"classic"``, two allreduces per
iteration, and ``"thesis"``, Algorithm 2 as printed with ``<r,r>`` summed again: three);
:class:`Fused` is Chronopoulos–Gear (``"fused"``: one allreduce of two numbers). Each
holds its search direction and ``ρ = rᵀr`` and updates the solver's iterate ``x`` in
place; the local vector work is timed into the ``vector`` category of the
:class:`~mpiworkbench.solvers.cg.timing.TimedOperations` it communicates through.
"""

from __future__ import annotations

import time

import numpy as np

from mpiworkbench.solvers.cg.timing import TimedOperations
from mpiworkbench.solvers.cg.vectors import local_dot, local_dot2, update_fused, update_p, update_x_r

__all__ = ["Classic", "Fused", "start"]


class Classic:
    """Hestenes–Stiefel CG from the residual *r* of *x* (``thesis``: Algorithm 2's extra sum)."""

    def __init__(self, ops: TimedOperations, x: np.ndarray, r: np.ndarray, total: int, thesis: bool = False):
        self.ops, self.x, self.r, self.thesis = ops, x, r, thesis
        self._pl = np.zeros(total)  # p lives in a local value vector: the matvec needs its ghosts
        self.p = self._pl[: len(x)]
        self.p[:] = r
        self._v = np.empty(len(x))  # A p, a new one each iteration
        self.rho = ops.allreduce(local_dot(r, r))

    def step(self) -> None:
        """One iteration: ``x``, ``r``, ``p`` and ``rho`` move on (collective)."""
        ops, timing = self.ops, self.ops.timing
        v = ops.matvec(self._pl, self.p, out=self._v)
        t0 = time.perf_counter()
        if self.thesis:
            # Algorithm 2 lines 13-16: <r,r> summed again although it is rho_k
            a1s = local_dot(self.r, self.r)
            t1 = time.perf_counter()
            a1 = ops.allreduce(a1s)
            t2 = time.perf_counter()
            a2s = local_dot(self.p, v)
            timing["vector"] += (t1 - t0) + (time.perf_counter() - t2)
        else:
            a1 = self.rho
            a2s = local_dot(self.p, v)
            timing["vector"] += time.perf_counter() - t0
        a2 = ops.allreduce(a2s)
        t0 = time.perf_counter()
        rs = update_x_r(self.x, self.r, self.p, v, a1 / a2)
        timing["vector"] += time.perf_counter() - t0
        rho_new = ops.allreduce(rs)
        t0 = time.perf_counter()
        update_p(self.p, self.r, rho_new / self.rho)
        self.rho = rho_new
        timing["vector"] += time.perf_counter() - t0


class Fused:
    """Chronopoulos–Gear CG from the residual *r* of *x*: one allreduce per iteration."""

    def __init__(self, ops: TimedOperations, x: np.ndarray, r: np.ndarray, total: int):
        n = len(x)
        self.ops, self.x = ops, x
        self._rl = np.zeros(total)  # r lives in a local value vector: the matvec is A r
        self.r = self._rl[:n]
        self.r[:] = r
        self.w = ops.matvec(self._rl, self.r)
        gamma, delta = ops.allreduce2(*local_dot2(self.r, self.w))
        self.rho = gamma
        self.alpha = gamma / delta if delta != 0 else 0.0
        self.beta = 0.0
        self.p = np.zeros(n)
        self.s = np.zeros(n)

    def step(self) -> None:
        """One iteration: ``x``, ``r``, ``p``, ``s``, ``w`` and ``rho`` move on (collective)."""
        ops, timing = self.ops, self.ops.timing
        t0 = time.perf_counter()
        alpha = self.alpha
        update_fused(self.p, self.s, self.x, self.r, self.w, alpha, self.beta)
        timing["vector"] += time.perf_counter() - t0
        self.w = ops.matvec(self._rl, self.r, out=self.w)  # the last w is used up by now
        t0 = time.perf_counter()
        gs, ds = local_dot2(self.r, self.w)
        timing["vector"] += time.perf_counter() - t0
        gamma, delta = ops.allreduce2(gs, ds)
        self.beta = gamma / self.rho
        self.alpha = gamma / (delta - self.beta * gamma / alpha)
        self.rho = gamma


def start(variant: str, ops: TimedOperations, x: np.ndarray, r: np.ndarray, total: int) -> Classic | Fused:
    """The recurrence of *variant* (a name of ``VARIANTS``), started from *x* and its residual *r*."""
    if variant == "fused":
        return Fused(ops, x, r, total)
    return Classic(ops, x, r, total, thesis=variant == "thesis")
