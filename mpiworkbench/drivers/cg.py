"""The notebook's handle on a distributed CG solver living on the engines.

The solver (:class:`mpiworkbench.solvers.cg.solver.CGSolver`) lives on every engine; this
handle steps it, follows its residual history and pulls only what rank 0 gathered. Every
action of the CG panel is a method here first; the panel's buttons only call them.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable

import numpy as np

from mpiworkbench.client.calls.trace import trace_steps
from mpiworkbench.drivers.solver_handle import Frame, SolverHandle, field_frame, slowest
from mpiworkbench.solvers.cg import poisson
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution, reduce_picture

FACTORY = "mpiworkbench.solvers.cg.solver:CGSolver"


class CGHandle(SolverHandle):
    """A CG solver on every engine of *wb*; keyword arguments go to ``CGSolver``.

    Examples
    --------
    >>> c = wb.cg(mesh=257)          # doctest: +SKIP
    >>> c.iterate(50); c.residuals[-1]  # doctest: +SKIP
    """

    factory = FACTORY

    def __init__(self, wb, mesh: int = 257, **options: Any):
        super().__init__(wb, mesh=mesh, **options)

    # -- life cycle --------------------------------------------------------------------
    def reset(self) -> None:
        """Start again from ``x0`` (a fresh solver on the engines, same options)."""
        self._create()
        first = self._obj.root("advance", 0, 0)
        self._residuals: list[float] = list(first["history"]["residual"])
        self._rho_ratios: list[float] = list(first["history"]["rho_ratio"])
        self.state = {k: v for k, v in first.items() if k != "history"}
        self.layout = self._obj.root("layout")
        self.mesh = int(self.options["mesh"])
        info = self._obj.root("result")
        self.tol, self.criterion, self.maxiter = info["tol"], info["criterion"], info["maxiter"]
        self.manufactured = info["max_error"] is not None
        self._warned = False
        self.last_timings: list[dict[str, float]] = self._obj.call("timings")

    # -- stepping ----------------------------------------------------------------------
    def iterate(self, k: int = 1) -> dict[str, Any]:
        """Run *k* more iterations on every rank (fewer if it converges).

        Returns
        -------
        dict
            The solver's state: ``iterations``, ``status`` (``running``, ``converged``,
            ``maxiter``), ``residual``, ``rho_ratio``. Warns once (``RuntimeWarning``) when
            ``maxiter`` is reached before the criterion.
        """
        with self._lock:
            report = self._obj.root("advance", int(k), len(self._residuals))
        return self._record(report)

    def trace(self, steps: int = 3):
        """Take *steps* CG iterations with every rank's MPI calls recorded; returns the
        :class:`~mpiworkbench.trace.Trace` (exchanges and allreduces per iteration)."""
        return trace_steps(self.wb, self.iterate, steps)

    def _record(self, report: dict[str, Any]) -> dict[str, Any]:
        self._residuals.extend(report["history"]["residual"])
        self._rho_ratios.extend(report["history"]["rho_ratio"])
        self.state = {key: v for key, v in report.items() if key != "history"}
        if self.state["status"] == "maxiter" and not self._warned:
            self._warned = True
            warnings.warn(
                f"CG reached maxiter={self.maxiter} before the {self.criterion} criterion "
                f"tol={self.tol:g}; the solution is the last iterate",
                RuntimeWarning,
                stacklevel=3,
            )
        return self.state

    #: Timing categories that are local work, and those that are MPI communication.
    COMPUTE = ("matvec", "vector")
    EXCHANGE = ("exchange", "allreduce")

    def frame(self, k: int, resolution: int | None = DEFAULT_RESOLUTION) -> Frame:
        """Iterate *k* times (fewer at convergence) and gather the iterate, in one round trip
        (what each frame of the panel's **Run to convergence** does).

        The iterate comes as a picture of at most *resolution* points per side (block means,
        each rank reducing its block first; exact extremes in ``frame.picture``), or whole
        for ``None``. At or below *resolution* it is the iterate itself.

        Returns
        -------
        Frame
            The iterate, the iterations taken and the slowest rank's
            compute (matvec, vector ops) and communication (exchange, allreduce) seconds.
        """
        return self.finish_frame(self.submit_frame(k, resolution))

    def _frame_calls(self, k: int, resolution: int | None = DEFAULT_RESOLUTION) -> list[tuple]:
        gather = ("gather_solution",) if resolution is None else ("solution_picture", resolution)
        return [("advance", int(k), len(self._residuals)), gather, ("timings",)]

    def _frame_before(self) -> tuple:
        return self.last_timings, self.iterations

    def _frame_result(self, results, wall: float, before: tuple) -> Frame:
        (reports, solutions, timings), (old, start) = results, before
        self._record(reports[0])
        self.last_timings = timings
        compute, exchange = slowest(old, timings, self.COMPUTE, self.EXCHANGE)
        return field_frame(self.iterations - start, solutions[0], compute, exchange, wall)

    @property
    def finished(self) -> bool:
        """Converged or stopped at ``maxiter``."""
        return self.state["status"] != "running"

    def run(
        self,
        should_stop: Callable[[], bool] = lambda: False,
        on_progress: Callable[["CGHandle"], None] | None = None,
        chunk_seconds: float = 0.3,
        chunk: int | None = None,
    ) -> dict[str, Any]:
        """Iterate until converged, ``maxiter`` or ``should_stop()`` (the panel's **Run to convergence**).

        Parameters
        ----------
        should_stop : callable, optional
            Asked before every chunk.
        on_progress : callable, optional
            ``on_progress(self)`` after every chunk (a panel redraws).
        chunk_seconds : float
            Aim for chunks of about this many seconds (the chunk grows or shrinks).
        chunk : int, optional
            Exactly this many iterations per chunk instead.

        Returns
        -------
        dict
            The state after the last chunk (see :meth:`iterate`).
        """
        k = chunk or 1
        while not self.finished and not should_stop():
            t0 = time.perf_counter()
            self.iterate(k)
            elapsed = max(time.perf_counter() - t0, 1e-6)
            if chunk is None:
                k = int(min(max(1, k * chunk_seconds / elapsed), 4 * k, 10_000))
            if on_progress is not None:
                on_progress(self)
        return self.state

    # -- inspection --------------------------------------------------------------------
    @property
    def iterations(self) -> int:
        """CG iterations done so far."""
        return int(self.state["iterations"])

    @property
    def residuals(self) -> np.ndarray:
        """``‖r_k‖/‖b‖`` for k = 0 … iterations."""
        return np.asarray(self._residuals)

    @property
    def rho_ratios(self) -> np.ndarray:
        """``ρ_k/ρ_0`` for k = 0 … iterations (the thesis's stopping quantity)."""
        return np.asarray(self._rho_ratios)

    def solution(self) -> np.ndarray:
        """The current iterate as a ``mesh × mesh`` array (gathered by MPI to rank 0)."""
        with self._lock:
            return self._obj.root("gather_solution")

    def picture(self, resolution: int = DEFAULT_RESOLUTION) -> Picture:
        """The iterate as a screen shows it: at most *resolution* points per side (block
        means, reduced on the ranks) and its exact extremes. :meth:`solution` is exact."""
        check_resolution(resolution)
        with self._lock:
            return self._obj.root("solution_picture", resolution)

    def exact_picture(self, shape: tuple[int, int]) -> np.ndarray:
        """The exact solution as a picture of *shape* (what :meth:`picture` gives for the
        iterate), to subtract from it: the same bins, so the difference is the bins' mean error.

        ``x(1−x)y(1−y)`` is a product of one function of each axis, and so is its bin mean:
        two 1-D reductions and an outer product, never the whole ``mesh²`` array. Kept for
        the last shape asked (a panel asks for the same one every frame).
        """
        shape = tuple(int(n) for n in shape)
        if getattr(self, "_exact_picture", (None, None))[0] != shape:
            if not self.manufactured:
                self.exact()  # raises: the exact solution is known only for the manufactured rhs
            if shape == (self.mesh, self.mesh):
                values = poisson.exact_solution(self.mesh)
            else:
                t = (np.arange(self.mesh) + 1) * poisson.grid_spacing(self.mesh)
                f = t * (1 - t)
                values = np.outer(reduce_picture(f, shape[0]).values, reduce_picture(f, shape[1]).values)
            self._exact_picture = (shape, values)
        return self._exact_picture[1]

    def exact(self) -> np.ndarray:
        """``x(1−x)y(1−y)`` at the nodes (the exact discrete solution of the default problem)."""
        if not self.manufactured:
            raise ValueError(
                f"the exact solution is known only for rhs='manufactured'; this solver has "
                f"rhs={self.options.get('rhs')!r}"
            )
        return poisson.exact_solution(self.mesh)

    def error(self) -> np.ndarray:
        """``solution() − exact()`` as a ``mesh × mesh`` array."""
        return self.solution() - self.exact()

    def timings(self) -> list[dict[str, float]]:
        """Per-rank cumulative seconds in matvec, exchange, allreduce and vector ops."""
        with self._lock:
            self.last_timings = self._obj.call("timings")
        return self.last_timings

    def result(self) -> dict[str, Any]:
        """The full report (as the CLI's JSON), including the max error."""
        with self._lock:
            return self._obj.root("result")

    def __repr__(self) -> str:
        return (
            f"<CGHandle mesh={self.mesh} iterations={self.iterations} status={self.state['status']} "
            f"residual={self.state['residual']:.3e}>"
        )
