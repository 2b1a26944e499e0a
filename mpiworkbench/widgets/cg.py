"""The live panel of the distributed CG solver (``wb.cg(mesh=257).widget()``).

Every action is a method of :class:`~mpiworkbench.drivers.cg.CGHandle`; the buttons only
call them. Pictures redraw in place (:mod:`mpiworkbench.plot.render`), so a run to
convergence is watched at video rate.
"""

from __future__ import annotations

import threading

from mpiworkbench.drivers.cg import CGHandle
from mpiworkbench.drivers.solver_handle import Frame
from mpiworkbench.plot import cg as plot
from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.widgets.live import LivePanel


class CGPanel(LivePanel):
    """ipywidgets over a :class:`CGHandle`. Control descriptions are stable (browser tests).

    ``Iterate k`` runs *k* iterations and redraws; ``Run to convergence`` plays frames in
    the background (iterations per frame adapted to hold a steady frame rate, frames/s and
    where a frame's time goes shown) until converged, ``maxiter`` or ``Stop``.
    """

    LABELS = ("Iterate 1", "Iterate 10", "Iterate 100", "Run to convergence", "Stop", "Reset")

    def __init__(self, handle: CGHandle):
        import ipywidgets as w

        super().__init__(handle)
        self._stop = threading.Event()
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
                self.frame_stats,
                w.HBox([self.residual_image, self.timing_image]),
                self.field_image,
            ]
        )
        self._new_figures()
        self.refresh()

    # Callbacks call these; each is an ordinary handle call plus a redraw.
    def step(self, k: int) -> None:
        """Iterate *k* times (one round trip) and redraw everything."""
        self.show(self.handle.frame(k))

    def reset(self) -> None:
        """Stop, reset the solve to its first iterate on the engines, and redraw (**Reset**)."""
        self.stop()
        self.handle.reset()
        self.restart_pacing()
        self._new_figures()
        self.refresh()

    def start_run(self) -> None:
        """Run to convergence in the background (Stop ends it after the frame in progress)."""
        self._stop.clear()
        self._start(self._run, "cg-run")

    def _run(self) -> None:
        try:
            self.play_frames(should_stop=self._stop.is_set)
        except Exception as exc:  # noqa: BLE001 - shown in the panel, the thread must not die silently
            self._show_error(exc, "run failed")
        finally:
            self._release()

    def stop(self) -> None:
        """Stop a running Play after the iteration in progress (**Stop**)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _finished(self) -> bool:
        return self.handle.finished

    def _set_busy(self, running: bool) -> None:
        for label, button in self.buttons.items():
            button.disabled = (label != "Stop") if running else (label == "Stop")

    # -- drawing -----------------------------------------------------------------------
    def _new_figures(self) -> None:
        self._residual = self._solution = None

    def refresh(self) -> None:
        """Redraw everything from the handle (no iterating)."""
        picture = self.handle.picture(self.resolution)
        self.handle.timings()
        with self._draw_lock:
            self._draw_state(picture.values, picture=picture)
            self._draw_timings()

    def _draw(self, frame: Frame) -> None:
        self._draw_state(frame.field, frame=True, picture=frame.picture)

    def _draw_state(self, u, frame: bool = False, picture=None) -> None:
        h = self.handle
        s = h.state
        reduced = picture is not None and picture.reduced
        err = u - h.exact_picture(u.shape) if h.manufactured else None
        # a reduced picture's error is the bins' mean error: say so rather than pass it off as the max
        of = " (bin means)" if reduced else ""
        max_error = "" if err is None else f"max|x<sub>k</sub> − u|{of} = {abs(err).max():.3e} &nbsp; "
        self.status.value = (
            f"<b>k = {s['iterations']}</b> &nbsp; status <b>{s['status']}</b> &nbsp; "
            f"‖r‖/‖b‖ = {s['residual']:.3e} &nbsp; ρ<sub>k</sub>/ρ<sub>0</sub> = {s['rho_ratio']:.3e} &nbsp; "
            f"{max_error}({h.criterion} criterion, tol {h.tol:g}, mesh {h.mesh}², {len(h.layout)} rank(s))"
        )
        if self._residual is None:
            self._residual = plot.live_residual(h.residuals, h.rho_ratios, tol=h.tol, criterion=h.criterion)
            self._solution = plot.LiveSolution(u, err, h.layout, scale=float(h.exact_picture(u.shape).max())
                                               if h.manufactured else None, mesh=h.mesh)
            self.resolution = self._solution.pixels(self._solution.fields[0])  # what the images are drawn at
        k = range(len(h.residuals))
        self.residual_image.value = self._residual.update(k, [h.residuals, h.rho_ratios])
        extremes = None if picture is None else (picture.vmin, picture.vmax)
        self._picture(self.field_image, self._solution.update(u, err, extremes=extremes), frame)

    def _draw_timings(self) -> None:
        self.timing_image.value = figure_to_png(plot.timings_figure(self.handle.last_timings), dpi=80)
