"""The distributed 3-D wave solver of thesis §6.1.

* :mod:`~mpiworkbench.solvers.wave.problem` — mesh, stability limit, exact solution,
  exchange names, argument checks (no MPI);
* :mod:`~mpiworkbench.solvers.wave.kernels` — the update kernels and their registry
  :data:`KERNELS` (NumPy, numba, C: the same bits);
* :mod:`~mpiworkbench.solvers.wave.whole_step` — whole steps in JIT with numba-mpi;
* :mod:`~mpiworkbench.solvers.wave.solver` — :class:`WaveSolver`, living on the ranks.

Names load on first use, so ``from mpiworkbench.solvers.wave import KERNELS`` pulls in
neither MPI nor numba (the CLI builds its choices that way).
"""

from __future__ import annotations

from mpiworkbench.core.objects import lazy_exports

__all__ = [
    "EXCHANGES",
    "KERNELS",
    "MIN_POINTS_PER_RANK",
    "WaveSolver",
    "exact_solution",
    "make_update",
    "parse_mesh",
    "stable_dt",
]

_WHERE = {
    "WaveSolver": "solver",
    "KERNELS": "kernels",
    "make_update": "kernels",
    "EXCHANGES": "problem",
    "MIN_POINTS_PER_RANK": "problem",
    "exact_solution": "problem",
    "parse_mesh": "problem",
    "stable_dt": "problem",
}


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
