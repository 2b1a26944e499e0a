"""Notebook handle and live panel for the distributed CG solver (``wb.cg(mesh=257)``).

The solver (:class:`mpiworkbench.solvers.cg.solver.CGSolver`) lives on the engines; this handle
steps it, follows its residual history and pulls only what rank 0 gathered. Every action
of the panel is a method of :class:`CGHandle` first; the buttons only call them.
"""

from __future__ import annotations

import threading
import time
import warnings
from typing import Any, Callable

import numpy as np

from mpiworkbench.client.solver_handle import SolverHandle
from mpiworkbench.solvers.cg import poisson
FACTORY = "mpiworkbench.solvers.cg.solver:CGSolver"


class CGHandle(SolverHandle):
    """A CG solver on every engine of *wb*; keyword arguments go to ``CGSolver``.

    >>> c = wb.cg(mesh=257)          # doctest: +SKIP
    >>> c.iterate(50); c.residuals[-1]
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

    # -- stepping ----------------------------------------------------------------------
    def iterate(self, k: int = 1) -> dict[str, Any]:
        """Run *k* more iterations on every rank (fewer if it converges); returns the state."""
        with self._lock:
            report = self._obj.root("advance", int(k), len(self._residuals))
        self._residuals.extend(report["history"]["residual"])
        self._rho_ratios.extend(report["history"]["rho_ratio"])
        self.state = {key: v for key, v in report.items() if key != "history"}
        if self.state["status"] == "maxiter" and not self._warned:
            self._warned = True
            warnings.warn(
                f"CG reached maxiter={self.maxiter} before the {self.criterion} criterion "
                f"tol={self.tol:g}; the solution is the last iterate",
                RuntimeWarning,
                stacklevel=2,
            )
        return self.state

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
        """Iterate until converged, ``maxiter`` or ``should_stop()``, in chunks of about
        *chunk_seconds* (or of exactly *chunk* iterations) so progress
        (``on_progress(self)``) can be shown between them."""
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
            return self._obj.call("timings")

    def result(self) -> dict[str, Any]:
        """The full report (as the CLI's JSON), including the max error."""
        with self._lock:
            return self._obj.root("result")

    def widget(self):
        """A live panel: iterate buttons, run/stop, residual, solution/error, time per rank."""
        return CGPanel(self).widget

    def __repr__(self) -> str:
        return (
            f"<CGHandle mesh={self.mesh} iterations={self.iterations} status={self.state['status']} "
            f"residual={self.state['residual']:.3e}>"
        )


class CGPanel:
    """ipywidgets over a :class:`CGHandle`. Control descriptions are stable (browser tests)."""

    LABELS = ("Iterate 1", "Iterate 10", "Iterate 100", "Run to convergence", "Stop", "Reset")

    def __init__(self, handle: CGHandle):
        import ipywidgets as w

        self.handle = handle
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.buttons = {label: w.Button(description=label, layout=w.Layout(width="auto")) for label in self.LABELS}
        self.buttons["Stop"].disabled = True
        for k in (1, 10, 100):
            self.buttons[f"Iterate {k}"].on_click(lambda _b, k=k: self.step(k))
        self.buttons["Run to convergence"].on_click(lambda _b: self.start_run())
        self.buttons["Stop"].on_click(lambda _b: self.stop())
        self.buttons["Reset"].on_click(lambda _b: self.reset())
        self.status = w.HTML()
        self.residual_image = w.Image(format="png")
        self.field_image = w.Image(format="png")
        self.timing_image = w.Image(format="png")
        self.widget = w.VBox(
            [
                w.HBox(list(self.buttons.values())),
                self.status,
                w.HBox([self.residual_image, self.timing_image]),
                self.field_image,
            ]
        )
        self.refresh()

    # Callbacks call these; each is an ordinary handle call plus a redraw.
    def step(self, k: int) -> None:
        self.handle.iterate(k)
        self.refresh()

    def reset(self) -> None:
        self.stop()
        self.handle.reset()
        self.refresh()

    def start_run(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._set_running(True)
        self._thread = threading.Thread(target=self._run, name="cg-run", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.handle.run(should_stop=self._stop.is_set, on_progress=lambda _h: self.refresh())
        except Exception as exc:  # noqa: BLE001 - shown in the panel, the thread must not die silently
            self.status.value = f"<b style='color:#b2182b'>run failed:</b> {type(exc).__name__}: {exc}"
        finally:
            self._set_running(False)
            self.refresh()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def wait(self, timeout: float | None = None) -> None:
        """Block until a run started with the button has ended (for scripts and tests)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _set_running(self, running: bool) -> None:
        for label, button in self.buttons.items():
            button.disabled = (label != "Stop") if running else (label == "Stop")

    def refresh(self) -> None:
        from mpiworkbench.plot import cg as plot
        from mpiworkbench.plot.render import figure_to_png
        h = self.handle
        s = h.state
        self.status.value = (
            f"<b>k = {s['iterations']}</b> &nbsp; status <b>{s['status']}</b> &nbsp; "
            f"‖r‖/‖b‖ = {s['residual']:.3e} &nbsp; ρ<sub>k</sub>/ρ<sub>0</sub> = {s['rho_ratio']:.3e} "
            f"&nbsp; ({h.criterion} criterion, tol {h.tol:g}, mesh {h.mesh}², {len(h.layout)} rank(s))"
        )
        self.residual_image.value = figure_to_png(
            plot.residual_figure(h.residuals, h.rho_ratios, tol=h.tol, criterion=h.criterion), dpi=80
        )
        u = h.solution()
        err = u - h.exact() if h.manufactured else None
        self.field_image.value = figure_to_png(
            plot.solution_error_figure(u, err, h.layout, iteration=h.iterations), dpi=80
        )
        self.timing_image.value = figure_to_png(plot.timings_figure(h.timings()), dpi=80)
