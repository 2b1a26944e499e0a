"""The live panel of the distributed CG solver (``wb.cg(mesh=257).widget()``).

Every action is a method of :class:`~mpiworkbench.client.cg.CGHandle`; the buttons only
call them.
"""

from __future__ import annotations

import threading

from mpiworkbench.client.cg import CGHandle


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
