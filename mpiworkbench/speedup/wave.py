"""Speedup kernel: time steps of the distributed 3-D wave solver (thesis §6.1.4).

Variant ``"KERNEL/EXCHANGE"`` picks the solver's update kernel (numpy, numba, c) and
halo exchange (sendrecv, nonblocking, packed). The whole-step numba-mpi variant is not
offered: numba-mpi has no communicator argument, so it cannot run on the
sub-communicators the smaller rank counts use.
"""

from __future__ import annotations

from mpiworkbench.speedup.experiments import split_variant
import math


def parse_variant(variant: str) -> tuple[str, str]:
    """``kernel/exchange``."""
    return split_variant(variant, "wave", "numpy/sendrecv (kernel/exchange)")


class WaveSteps:
    """Owns a :class:`~mpiworkbench.solvers.wave.solver.WaveSolver`; ``run()`` advances ``steps`` steps."""

    def __init__(self, comm, mesh: int, variant: str, steps: int):
        from mpiworkbench.solvers.wave.solver import WaveSolver
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
        return {"steps": self.solver.steps, "t": self.solver.t, "max_error": err, "ok": math.isfinite(err) and err < 0.02}

    def close(self) -> None:
        self.solver.close()


def make_kernel(comm, size: int, variant: str, steps: int = 40) -> WaveSteps:
    """Registry factory (see :mod:`mpiworkbench.speedup.experiments`)."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1; got {steps}")
    parse_variant(variant)
    return WaveSteps(comm, size, variant, steps)
