"""Speedup kernel: steps of report 003's 2-D heat diffusion (:mod:`mpiworkbench.solvers.heat`).

Variant: the halo-row exchange (``sendrecv``, ``nonblocking``, ``persistent``), or
``sendrecv@<backend>`` with the rows and the ``Allreduce(MAX)`` through a backend of
:mod:`mpiworkbench.backends`. Each repetition runs ``steps`` steps from the same initial
field (the solver is rebuilt in ``prepare()``, untimed), so every repetition does the same
work; ``flops`` counts it as :data:`~mpiworkbench.solvers.heat.FLOPS_PER_POINT` per updated
point and step, and the analysis reports FLOP/s = flops / median time (report 003, Table 1).
"""

from __future__ import annotations

import math

from mpiworkbench.solvers.heat import EXCHANGES, FLOPS_PER_POINT, HeatSolver
from mpiworkbench.speedup.experiments import split_backend
from mpiworkbench.speedup.fields import field_digest


class HeatSteps:
    """Owns a :class:`~mpiworkbench.solvers.heat.HeatSolver`; ``run()`` advances ``steps`` steps."""

    def __init__(self, comm, grid: int, variant: str, steps: int):

        self.comm, self.grid, self.steps = comm, int(grid), int(steps)
        self.exchange, self.backend = split_backend(variant)
        if self.exchange not in EXCHANGES:
            raise ValueError(f"heat variant must be an exchange of {EXCHANGES}; got {variant!r}")
        self.solver = None
        self.prepare()  # validates the input on every rank now

    def prepare(self) -> None:

        if self.solver is not None:
            self.solver.close()
        self.solver = HeatSolver(self.grid, comm=self.comm, exchange=self.exchange, backend=self.backend)

    @property
    def flops(self) -> int:
        """Floating-point operations of one repetition (all ranks)."""

        return FLOPS_PER_POINT * self.solver.updated_points() * self.steps

    def run(self) -> None:
        self.solver.step(self.steps)

    def verify(self) -> dict:
        """The field after the last repetition's steps, as a digest every backend must match."""
        s = self.solver
        field = s.gather()
        return {
            "steps": s.steps,
            "delta": s.delta,
            "field_digest": field_digest(field) if s.rank == 0 else None,
            "ok": math.isfinite(s.delta) and s.steps == self.steps,
        }

    def close(self) -> None:
        if self.solver is not None:
            self.solver.close()
            self.solver = None


def make_kernel(comm, size: int, variant: str, steps: int = 200) -> HeatSteps:
    """Registry factory (see :mod:`mpiworkbench.speedup.experiments`)."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1; got {steps}")
    return HeatSteps(comm, size, variant, steps)
