"""The names a CG solve is configured by: variants, stopping criteria, partitions.

The registries here are the only place these names are typed; the solver, the
``mpiworkbench cg`` CLI and the speedup experiment take their choices from them.
Cheap to import: no MPI, no numba, no SciPy.

Three variants, same iterates in exact arithmetic:

``"classic"``
    Hestenes–Stiefel CG, reusing ``ρ_k``: two allreduces per iteration (the default).
``"thesis"``
    Algorithm 2 as printed: three allreduces per iteration (``<r,r>`` is summed twice).
``"fused"``
    Chronopoulos–Gear: one allreduce of two numbers per iteration, one more vector update.
"""

from __future__ import annotations

import math

import numpy as np

from mpiworkbench.solvers.cg.poisson import PARTITIONS, RHS_NAMES

__all__ = [
    "ALLREDUCES_PER_ITERATION", "CRITERIA", "PARTITIONS", "RHS_NAMES", "VARIANTS", "default_maxiter", "validate",
]

#: The variant registry: name → allreduce calls per iteration (default variant first).
ALLREDUCES_PER_ITERATION = {"classic": 2, "thesis": 3, "fused": 1}
#: Variant names.
VARIANTS = tuple(ALLREDUCES_PER_ITERATION)
#: Stopping rules: ``"thesis"`` (``ρ_k/ρ_0 ≤ tol`` from ``x0 = b``) or ``"relative"``
#: (``‖r_k‖/‖b‖ ≤ tol`` from ``x0 = 0``).
CRITERIA = ("thesis", "relative")


def default_maxiter(mesh: int) -> int:
    """Iteration cap when none is given: ``10·mesh + 100``.

    Unpreconditioned CG on this matrix needs about ``1.7·mesh`` iterations for
    ``‖r‖/‖b‖ ≤ 1e-8`` (√κ grows like ``mesh``), so the cap only stops runaways.
    """
    return 10 * mesh + 100


def validate(mesh, tol, criterion, partition, variant, maxiter, x0) -> None:
    """Check a solver's arguments (raises ValueError naming the bad one)."""
    if isinstance(mesh, bool) or not isinstance(mesh, (int, np.integer)) or mesh < 1:
        raise ValueError(f"mesh must be an integer of at least 1 interior point per axis; got {mesh!r}")
    if not isinstance(tol, (int, float, np.floating)) or not math.isfinite(tol) or tol <= 0:
        raise ValueError(f"tol must be a positive finite number such as 1e-8; got {tol!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}; got {criterion!r}")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}; got {partition!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    if maxiter is not None and (isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 0):
        raise ValueError(f"maxiter must be a non-negative integer or None; got {maxiter!r}")
    if x0 not in (None, "rhs", "zero"):
        raise ValueError(f"x0 must be 'rhs' (Algorithm 2), 'zero' or None (the criterion's default); got {x0!r}")
