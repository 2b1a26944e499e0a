"""Distributed conjugate gradients on the 2-D Poisson system of thesis §6.2.

* :mod:`~mpiworkbench.solvers.cg.variants` — the registries: :data:`VARIANTS`,
  :data:`CRITERIA` (and the problem's :data:`PARTITIONS`, :data:`RHS_NAMES`); no MPI;
* :mod:`~mpiworkbench.solvers.cg.poisson` — the matrix blocks, right-hand sides, exact solution;
* :mod:`~mpiworkbench.solvers.cg.vectors` — the numba-compiled local vector kernels;
* :mod:`~mpiworkbench.solvers.cg.exchange` — the backend and the ghost-strip exchange;
* :mod:`~mpiworkbench.solvers.cg.recurrences` — the iteration of each variant (classic/thesis, fused);
* :mod:`~mpiworkbench.solvers.cg.timing` — the timed matvec and allreduces (:data:`TIMING_KEYS`);
* :mod:`~mpiworkbench.solvers.cg.report` — the result record and the gathered solution;
* :mod:`~mpiworkbench.solvers.cg.solver` — :class:`CGSolver`, living on the ranks.

Names load on first use, so reading the registries pulls in neither MPI, numba nor SciPy.
"""

from __future__ import annotations

from mpiworkbench.core.objects import lazy_exports

__all__ = [
    "ALLREDUCES_PER_ITERATION",
    "CRITERIA",
    "CGSolver",
    "LocalValueExchange",
    "PARTITIONS",
    "RHS_NAMES",
    "TIMING_KEYS",
    "VARIANTS",
    "default_maxiter",
]

_WHERE = {
    "CGSolver": "solver",
    "LocalValueExchange": "exchange",
    "TIMING_KEYS": "timing",
    "ALLREDUCES_PER_ITERATION": "variants",
    "CRITERIA": "variants",
    "PARTITIONS": "variants",
    "RHS_NAMES": "variants",
    "VARIANTS": "variants",
    "default_maxiter": "variants",
}


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
