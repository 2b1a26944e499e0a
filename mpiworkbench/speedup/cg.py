"""Speedup kernel: a whole CG solve of the 2-D Poisson system (thesis §6.2.3).

Each repetition solves from scratch to the tolerance; the solver is built in
``prepare()``, outside the timed region (the thesis times "the iteration steps").
Variant ``"VARIANT/PARTITION"``: the CG variant (classic, thesis, fused: 2, 3 or 1
allreduces per iteration) and the partition (rows as in thesis Fig. 6.8, or 2-D blocks).
``"VARIANT/PARTITION@BACKEND"`` (the ``--backend`` dimension, thesis Figs. 6.10-6.13)
runs the ghost exchange and every allreduce through that backend of
:mod:`mpiworkbench.backends` (without one: the solver's default, mpi4py-buf).
"""

from __future__ import annotations

from mpiworkbench.solvers.cg.solver import CGSolver
from mpiworkbench.speedup.experiments import split_backend, split_variant
from mpiworkbench.speedup.fields import field_digest

#: The solver's backend when the variant names none.
DEFAULT_BACKEND = "mpi4py-buf"


def parse_variant(variant: str) -> tuple[str, str, str]:
    """``variant/partition[@backend]`` → ``(variant, partition, backend)``."""
    base, backend = split_backend(variant)
    return (*split_variant(base, "cg", "classic/rows (variant/partition)"), backend or DEFAULT_BACKEND)


class CGSolve:
    def __init__(self, comm, mesh: int, variant: str, tol: float):
        self.comm, self.mesh, self.tol = comm, int(mesh), float(tol)
        self.cg_variant, self.partition, self.backend = parse_variant(variant)
        self.solver = None
        self.last: dict = {}
        self.prepare()  # validates the input on every rank now

    def prepare(self) -> None:
        if self.solver is not None:
            self.solver.close()
        self.solver = CGSolver(
            self.mesh, comm=self.comm, tol=self.tol, variant=self.cg_variant, partition=self.partition,
            backend=self.backend,
        )

    def run(self) -> None:
        self.solver.iterate(None)

    def verify(self) -> dict:
        """The solve's outcome; ``field_digest`` of the solution (equal across backends when
        their allreduces sum in the same order, so a test compares ``max_error`` instead)."""
        s = self.solver
        solution = s.gather_solution()
        return {
            "iterations": s.iterations,
            "status": s.status,
            "true_residual": s.true_residual(),
            "max_error": s.max_error(),
            "field_digest": field_digest(solution) if self.comm.rank == 0 else None,
            "ok": s.status == "converged",
        }

    def close(self) -> None:
        if self.solver is not None:
            self.solver.close()
            self.solver = None


def make_kernel(comm, size: int, variant: str, tol: float = 1e-8) -> CGSolve:
    """Registry factory (see :mod:`mpiworkbench.speedup.experiments`)."""
    parse_variant(variant)
    return CGSolve(comm, size, variant, tol)
