"""The notebook's handle on a distributed heat-diffusion solver living on the engines.

The solver (:class:`mpiworkbench.solvers.heat.HeatSolver`, report 003's cylinder with halo
rows) lives on every engine; this handle steps it, follows its largest change per step and
its distance from the steady state, and pulls only what rank 0 gathered. Every action of
the heat panel is a method here first; the panel's buttons only call them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpiworkbench.client.calls.trace import trace_steps
from mpiworkbench.drivers.solver_handle import Frame, SolverHandle, field_frame, slowest
from mpiworkbench.solvers.heat import row_range
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution

FACTORY = "mpiworkbench.solvers.heat:HeatSolver"


class HeatHandle(SolverHandle):
    """A heat solver on every engine of *wb*; keyword arguments go to ``HeatSolver``.

    Examples
    --------
    >>> h = wb.heat(shape=(120, 160), exchange="nonblocking")   # doctest: +SKIP
    >>> h.step(100); h.deltas[-1], h.errors[-1]                 # doctest: +SKIP
    """

    factory = FACTORY
    #: Timing categories that are local work, and those that are MPI communication.
    COMPUTE = ("compute",)
    EXCHANGE = ("exchange", "allreduce")

    # -- life cycle --------------------------------------------------------------------
    def reset(self) -> None:
        """A fresh solver (the initial field), same options."""
        self._create()
        info = self._obj.root("info")
        self.info = info
        self.shape = tuple(info["shape"])
        self.nranks = int(info["ranks"])
        #: Global rows ``[start, stop)`` of every rank (the strips a panel draws).
        self.rows = [row_range(self.shape[0], r, self.nranks) for r in range(self.nranks)]
        self.tol, self.alpha, self.top, self.bottom = (self._obj.attr(name)[0] for name in ("tol", "alpha", "top", "bottom"))
        self.steps = 0
        #: Step counts at which :attr:`deltas` and :attr:`errors` were recorded.
        self.history_steps: list[int] = [0]
        #: Largest change of the last step (``inf`` before the first).
        self.deltas: list[float] = [float("inf")]
        #: Max distance from the exact steady state.
        self.errors: list[float] = [float(self._obj.root("error"))]
        self.last_timings: list[dict[str, float]] = self._obj.call("timings")

    # -- stepping ----------------------------------------------------------------------
    def _record(self, report: dict[str, Any], error: float) -> dict[str, Any]:
        self.steps = int(report["steps"])
        self.history_steps.append(self.steps)
        self.deltas.append(float(report["delta"]))
        self.errors.append(float(error))
        return {"steps": self.steps, "delta": self.deltas[-1], "error": self.errors[-1]}

    def step(self, k: int = 1) -> dict[str, Any]:
        """Advance *k* steps on every rank.

        Returns
        -------
        dict
            ``{"steps", "delta", "error"}`` after the steps (also appended to
            :attr:`history_steps`, :attr:`deltas`, :attr:`errors`).
        """
        (reports, errors), _ = self._calls(("step", int(k)), ("error",))
        return self._record(reports[0], errors[0])

    def trace(self, steps: int = 3):
        """Take *steps* steps with every rank's MPI calls recorded; returns the
        :class:`~mpiworkbench.trace.Trace` (halo rows, the convergence allreduce)."""
        return trace_steps(self.wb, self.step, steps)

    def frame(self, k: int, resolution: int | None = DEFAULT_RESOLUTION) -> Frame:
        """Step *k* times and gather the field, in one round trip (a frame of the panel's **Play**).

        The field comes as a picture of at most *resolution* points per side (block means,
        each rank reducing its rows first; exact extremes in ``frame.picture``), or whole
        for ``None``. At or below *resolution* it is the field itself.

        Returns
        -------
        Frame
            The field, the steps taken and the slowest rank's compute and
            communication (exchange, allreduce) seconds.
        """
        return self.finish_frame(self.submit_frame(k, resolution))

    def _frame_calls(self, k: int, resolution: int | None = DEFAULT_RESOLUTION) -> list[tuple]:
        gather = ("gather",) if resolution is None else ("picture", resolution)
        return [("step", int(k)), gather, ("error",), ("timings",)]

    def _frame_before(self) -> tuple:
        return self.last_timings, self.steps

    def _frame_result(self, results, wall: float, before: tuple) -> Frame:
        (reports, fields, errors, timings), (old, steps) = results, before
        self._record(reports[0], errors[0])
        self.last_timings = timings
        compute, exchange = slowest(old, timings, self.COMPUTE, self.EXCHANGE)
        return field_frame(self.steps - steps, fields[0], compute, exchange, wall)

    @property
    def finished(self) -> bool:
        """The largest change of the last step is below ``tol`` (the steady state is reached)."""
        return self.deltas[-1] < self.tol

    # -- inspection --------------------------------------------------------------------
    def field(self) -> np.ndarray:
        """The whole current ``M × N`` field (gathered by MPI to rank 0)."""
        with self._lock:
            return self._obj.root("gather")

    def picture(self, resolution: int = DEFAULT_RESOLUTION) -> Picture:
        """The field as a screen shows it: at most *resolution* points per side (block means,
        reduced on the ranks) and its exact extremes. :meth:`field` is exact."""
        check_resolution(resolution)
        with self._lock:
            return self._obj.root("picture", resolution)

    def timings(self) -> list[dict[str, float]]:
        """Per-rank cumulative seconds in compute, exchange and allreduce (rank order)."""
        with self._lock:
            self.last_timings = self._obj.call("timings")
        return self.last_timings

    def __repr__(self) -> str:
        return (f"<HeatHandle shape={self.shape[0]}x{self.shape[1]} ranks={self.nranks} "
                f"exchange={self.info['exchange']} steps={self.steps} delta={self.deltas[-1]:.3e}>")
