"""The live panel of the distributed heat-diffusion solver (``wb.heat(shape=(120, 160)).widget()``).

Every action is a method of :class:`~mpiworkbench.drivers.heat.HeatHandle`; the buttons
only call them. The field shows each rank's strip of rows; Play runs until the largest
change per step drops below ``tol`` (the steady state) or is paused.
"""

from __future__ import annotations

from mpiworkbench.drivers.heat import HeatHandle
from mpiworkbench.drivers.solver_handle import Frame
from mpiworkbench.plot import heat as plot
from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.widgets.live import SteppingPanel


class HeatPanel(SteppingPanel):
    """ipywidgets over a :class:`HeatHandle`; control descriptions are stable for browser tests.

    Buttons ``Step 10``, ``Step 100``, ``Step 1000``, toggle ``Play`` (pressed = playing),
    ``Reset``. Pictures: the field with the ranks' strips, the convergence history (largest
    change per step, distance from the steady state), each rank's time per step.
    """

    STEPS = (10, 100, 1000)
    NAME = "heat"

    def __init__(self, handle: HeatHandle):
        import ipywidgets as w

        super().__init__(handle)
        self.reset_button = w.Button(description="Reset", tooltip="start again from the initial field")
        self.reset_button.on_click(lambda _b: self.reset())
        self.status = w.HTML()
        self.field_image = w.Image(format="png")
        self.history_image = w.Image(format="png")
        self.timing_image = w.Image(format="png")
        self.widget = w.VBox(
            [
                w.HBox([*self.buttons.values(), self.play, self.reset_button]),
                self.status,
                self.frame_stats,
                w.HBox([self.field_image, w.VBox([self.history_image, self.timing_image])]),
            ]
        )
        self.refresh()

    def reset(self) -> None:
        """Pause, then a fresh solver from the initial field."""
        self.set_playing(False)
        self.play.value = False
        self.wait()
        self.handle.reset()
        self.restart_pacing()
        self.refresh()

    def _set_busy(self, busy: bool) -> None:
        super()._set_busy(busy)
        self.reset_button.disabled = busy

    def _finished(self) -> bool:
        return self.handle.finished

    # -- drawing -----------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw everything from the handle (no stepping); new figures (after a reset)."""
        field = self.handle.picture(self.resolution).values
        self.handle.timings()
        with self._draw_lock:
            self._field = self._history = None
            self._draw_state(field)
            self._draw_timings()

    def _draw(self, frame: Frame) -> None:
        self._draw_state(frame.field, frame=True)

    def _draw_state(self, field, frame: bool = False) -> None:
        h = self.handle
        state = "steady state reached" if h.finished else "diffusing"
        self.status.value = (
            f"<b>steps = {h.steps}</b> &nbsp; largest change = {h.deltas[-1]:.3e} &nbsp; "
            f"max|u − steady| = {h.errors[-1]:.3e} &nbsp; <b>{state}</b> &nbsp; "
            f"({h.shape[0]}x{h.shape[1]} grid, {h.nranks} rank(s), exchange {h.info['exchange']}, "
            f"alpha {h.alpha:g}, tol {h.tol:g})"
        )
        if self._field is None:
            lo, hi = sorted((h.top, h.bottom))
            self._field = plot.LiveField(field, h.rows, vmin=lo, vmax=hi,
                                         title=f"temperature on {h.nranks} rank(s)' strips of rows")
            self.resolution = self._field.pixels(self._field.ax)  # what the image is drawn at
            self._history = plot.live_history(h.history_steps, h.deltas, h.errors, tol=h.tol)
        self._picture(self.field_image, self._field.update(field), frame)
        self.history_image.value = self._history.update(h.history_steps, [h.deltas, h.errors])

    def _draw_timings(self) -> None:
        self.timing_image.value = figure_to_png(plot.timings_figure(self.handle.last_timings, self.handle.steps),
                                                dpi=70)
