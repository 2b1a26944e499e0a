"""What a CG solve reports: the result record (``mpiworkbench cg --json``) and the gathered solution."""

from __future__ import annotations

from typing import Any

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.solvers.cg.variants import ALLREDUCES_PER_ITERATION
from mpiworkbench.solvers.cg.timing import TIMING_KEYS
from mpiworkbench.solvers.decomposition import gather_blocks
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution, gather_picture

__all__ = ["gather_solution", "solution_picture", "solver_result"]


def gather_solution(solver) -> np.ndarray | None:
    """The ``mesh × mesh`` solution of *solver* on rank 0 (``None`` elsewhere). Collective.

    Plain mpi4py ``Gatherv``: gathering for display is not part of the measured
    iteration, and not every backend has uneven-count gathers.
    """
    pieces = [(b.rank, (slice(b.i0, b.i1), slice(b.j0, b.j1))) for b in solver.blocks]
    return gather_blocks(solver.comm, solver.x.reshape(solver.block.shape), pieces, (solver.mesh, solver.mesh))


def solution_picture(solver, resolution: int | None = DEFAULT_RESOLUTION) -> Picture | None:
    """The solution of *solver* as a screen shows it, on rank 0 (``None`` elsewhere). Collective.

    See :func:`mpiworkbench.solvers.picture.gather_picture`: each rank reduces its own block
    to bin means before one ``Gatherv`` (plain mpi4py, like :func:`gather_solution`).
    """
    mpi.checked(solver.comm, lambda: check_resolution(resolution))
    ranges = [((b.i0, b.i1), (b.j0, b.j1)) for b in solver.blocks]
    return gather_picture(solver.comm, solver.x.reshape(solver.block.shape), ranges, (solver.mesh, solver.mesh),
                          resolution)


def solver_result(solver) -> dict[str, Any]:
    """Everything a report of *solver* needs, the same on every rank (collective).

    The time split is the slowest rank's per category; ``timings_per_rank`` has them all.
    """
    per_rank = solver.comm.allgather(solver.timings())
    time_s = max(t["total"] for t in per_rank)
    return {
        "mesh": solver.mesh,
        "unknowns": solver.mesh * solver.mesh,
        "np": solver.comm.Get_size(),
        "partition": solver.partition,
        "dims": list(solver.dims),
        "variant": solver.variant,
        "allreduces_per_iteration": ALLREDUCES_PER_ITERATION[solver.variant],
        "backend": solver.backend_name,
        "criterion": solver.criterion,
        "tol": solver.tol,
        "x0": solver.x0,
        "rhs": solver.rhs_name,
        "maxiter": solver.maxiter,
        "status": solver.status,
        "converged": solver.status == "converged",
        "iterations": solver.iterations,
        "residual": solver.relative_residual(),
        "rho_ratio": solver.rho_ratio(),
        "true_residual": solver.true_residual(),
        "max_error": solver.max_error(),
        "time_s": time_s,
        "time_per_iteration_s": time_s / solver.iterations if solver.iterations else None,
        "setup_s": solver.setup_s,
        "timing_split_s": {key: max(t[key] for t in per_rank) for key in TIMING_KEYS},
        "timings_per_rank": per_rank,
    }
