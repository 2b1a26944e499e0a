"""CG's timed operations: the matrix-vector product with its exchange, and the allreduces.

Every call adds its seconds to one category of :attr:`TimedOperations.timing`
(:data:`TIMING_KEYS`); the solver adds the local vector work (``vector``) itself.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Iterator

import numpy as np

__all__ = ["TIMING_KEYS", "TimedOperations"]

#: Categories of the per-rank time split (``vector``: local dot products and updates).
TIMING_KEYS = ("matvec", "exchange", "allreduce", "vector")


class TimedOperations:
    """The communicating steps of one rank's CG iteration, each one timed.

    Parameters
    ----------
    operator
        This rank's rows of the matrix: ``operator(local_value, out)`` is ``A @ local_value``
        (a :class:`~mpiworkbench.solvers.cg.poisson.LocalOperator`).
    exchange
        Fills the ghost strips of a local value vector (a
        :class:`~mpiworkbench.solvers.cg.exchange.LocalValueExchange`).
    backend
        The :mod:`mpiworkbench.backends` backend the allreduces go through.

    Attributes
    ----------
    timing : dict
        Seconds per category of :data:`TIMING_KEYS`, accumulated; never replaced, so a
        reference to it stays current.
    """

    def __init__(self, operator, exchange, backend):
        self.operator = operator
        self.exchange = exchange
        self.backend = backend
        self.timing = dict.fromkeys(TIMING_KEYS, 0.0)
        self._buf = np.zeros(2)
        self._out = np.zeros(2)

    def reset(self) -> None:
        """Set every category back to zero."""
        self.timing.update(dict.fromkeys(TIMING_KEYS, 0.0))

    @contextmanager
    def untimed(self) -> Iterator[None]:
        """Operations inside the block leave :attr:`timing` as it was (e.g. a diagnostic)."""
        saved = dict(self.timing)
        try:
            yield
        finally:
            self.timing.update(saved)

    def matvec(self, local_value: np.ndarray, owned: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``A @ local_value`` (into *out*, if given) after the exchange fills its ghosts from
        *owned* (its first part)."""
        t0 = time.perf_counter()
        self.exchange(local_value, owned)
        t1 = time.perf_counter()
        y = self.operator(local_value, out)
        t2 = time.perf_counter()
        self.timing["exchange"] += t1 - t0
        self.timing["matvec"] += t2 - t1
        return y

    def allreduce(self, value: float) -> float:
        """The sum of *value* over the ranks (collective)."""
        return self.allreduce2(value, 0.0)[0]

    def allreduce2(self, a: float, b: float) -> tuple[float, float]:
        """The sums of *a* and of *b* over the ranks, in one allreduce (collective)."""
        t0 = time.perf_counter()
        buf, out = self._buf, self._out
        buf[0], buf[1] = a, b
        self.backend.allreduce(buf, "sum", out=out)
        self.timing["allreduce"] += time.perf_counter() - t0
        return float(out[0]), float(out[1])
