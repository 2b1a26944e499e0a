"""Speedup kernel: time steps of the distributed 3-D wave solver (thesis §6.1.4).

Variant ``"KERNEL/EXCHANGE"`` picks the solver's update kernel (numpy, numba, c) and
halo exchange (sendrecv, nonblocking, packed). Variant ``"KERNEL@BACKEND"`` (the
``--backend`` dimension, thesis Figs. 6.2-6.5) sends every halo message through a backend
of :mod:`mpiworkbench.backends` (the exchange ``backend:<name>``, the same packed pattern in
every module); numba-mpi's points need a world of exactly their rank count. The
whole-step numba-mpi loop is not offered: it cannot run on the sub-communicators the
smaller rank counts use.
"""

from __future__ import annotations

import math

from mpiworkbench.solvers.wave.solver import WaveSolver
from mpiworkbench.speedup.experiments import split_backend, split_variant
from mpiworkbench.speedup.fields import field_digest


def parse_variant(variant: str) -> tuple[str, str]:
    """``kernel/exchange``, or ``kernel@backend`` → ``(kernel, "backend:<backend>")``."""
    kernel, backend = split_backend(variant)
    if backend is not None:
        return kernel, f"backend:{backend}"
    return split_variant(variant, "wave", "numpy/sendrecv (kernel/exchange)")


class WaveSteps:
    """Owns a :class:`~mpiworkbench.solvers.wave.solver.WaveSolver`; ``run()`` advances ``steps`` steps."""

    def __init__(self, comm, mesh: int, variant: str, steps: int):
        kernel, exchange = parse_variant(variant)
        self.steps = int(steps)
        # a numba kernel compiles on its first step: the runner's warm-up run keeps that untimed
        self.solver = WaveSolver(mesh, comm=comm, kernel=kernel, exchange=exchange)

    def run(self) -> None:
        self.solver.step(self.steps)

    def verify(self) -> dict:
        """Max error against the exact solution, checked loosely: below 1 % of the amplitude 2.

        A sanity check that the timed steps computed the wave (the solver's own tests check
        convergence and bit-for-bit equal decompositions).
        """
        err = self.solver.error()
        field = self.solver.gather()  # bit-for-bit the same for every kernel, exchange and backend
        return {"steps": self.solver.steps, "t": self.solver.t, "max_error": err,
                "field_digest": field_digest(field) if self.solver.rank == 0 else None,
                "ok": math.isfinite(err) and err < 0.02}

    def close(self) -> None:
        self.solver.close()


def make_kernel(comm, size: int, variant: str, steps: int = 40) -> WaveSteps:
    """Registry factory (see :mod:`mpiworkbench.speedup.experiments`)."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1; got {steps}")
    parse_variant(variant)
    return WaveSteps(comm, size, variant, steps)
