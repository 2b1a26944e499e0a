"""The live panel of the distributed 3-D wave solver (``wb.wave(mesh=65).widget()``).

Every action is a method of :class:`~mpiworkbench.drivers.wave.WaveHandle`; the buttons
only call them. Pictures redraw in place (:mod:`mpiworkbench.plot.render`), so Play runs
at video rate and what it shows is the solver's speed, not Matplotlib's.
"""

from __future__ import annotations

from mpiworkbench.drivers.solver_handle import Frame
from mpiworkbench.drivers.wave import WaveHandle
from mpiworkbench.plot import wave as plot
from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.widgets.live import SteppingPanel


class WavePanel(SteppingPanel):
    """ipywidgets over a :class:`WaveHandle`; control descriptions are stable for browser tests.

    Buttons ``Step 1``, ``Step 10``, ``Step 100``, toggle ``Play`` (pressed = playing),
    dropdown ``Slice axis``, slider ``Slice index``. Steps run on the engines in a worker
    thread, one round trip per frame (steps and the slice, reduced on the ranks to the
    pixels it is drawn at; ``w.slice`` stays exact); the step buttons are
    disabled while it runs. Play adapts the steps per frame to hold a steady frame rate and
    shows frames/s and where a frame's time goes.
    """

    NAME = "wave"

    def __init__(self, handle: WaveHandle):
        import ipywidgets as w

        super().__init__(handle)
        self.axis = w.Dropdown(options=["x", "y", "z"], value="z", description="Slice axis", tooltip="axis normal to the slice")
        self.index = w.IntSlider(
            value=handle.mesh[2] // 2, min=0, max=handle.mesh[2] - 1, description="Slice index",
            tooltip="index of the slice along its axis", continuous_update=False,
        )
        self.axis.observe(lambda change: self.set_axis(change["new"]), names="value")
        self._quiet = False
        self.index.observe(lambda change: None if self._quiet else self.refresh(), names="value")
        self.status = w.HTML()
        self.slice_image = w.Image(format="png")
        self.error_image = w.Image(format="png")
        self.timing_image = w.Image(format="png")
        self._slice = None  # the live slice figure, rebuilt for a new axis
        self._error = None
        self.widget = w.VBox(
            [
                w.HBox([*self.buttons.values(), self.play]),
                w.HBox([self.axis, self.index]),
                self.status,
                self.frame_stats,
                w.HBox([self.slice_image, w.VBox([self.error_image, self.timing_image])]),
            ]
        )
        self.refresh()

    # -- actions (callbacks only call these) -------------------------------------------
    def set_axis(self, axis: str) -> None:
        """Show slices normal to *axis* (the index moves to that axis's middle)."""
        n = self.handle.mesh["xyz".index(axis)]
        self._quiet = True  # one redraw below, not one per slider change
        try:
            self.index.max = n - 1
            self.index.value = n // 2
        finally:
            self._quiet = False
        self.refresh()

    # -- workers -----------------------------------------------------------------------
    def _submit(self, k: int):
        where = (self.axis.value, int(self.index.value))
        return self.handle.submit_frame(k, self.resolution, axis=where[0], index=where[1]), where

    def _finish(self, started) -> Frame:
        started, where = started
        frame = self.handle.finish_frame(started)
        frame.where = where  # what the plane is, for _draw
        return frame

    # -- drawing -----------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw status, slice, error history and timing bars from the handle (no stepping).

        While playing, the next frame shows the new slice instead.
        """
        if self._playing.is_set() and self._busy.locked():
            return
        axis, index = self.axis.value, int(self.index.value)
        plane = self.handle.picture(axis, index, self.resolution).values
        self.handle.timings()
        with self._draw_lock:
            self._draw_state(plane, axis, index)
            self._draw_timings()

    def _draw(self, frame: Frame) -> None:
        self._draw_state(frame.field, *frame.where, frame=True)

    def _draw_state(self, plane, axis: str, index: int, frame: bool = False) -> None:
        h = self.handle
        self.status.value = (
            f"<b>steps = {h.steps}</b> &nbsp; t = {h.t:.4f} &nbsp; max|u − exact| = {h.errors[-1]:.3e} "
            f"&nbsp; (mesh {'x'.join(map(str, h.mesh))}, dims {'x'.join(map(str, h.dims))}, dt {h.dt:.4g}, "
            f"kernel {h.info['kernel']}, exchange {h.info['exchange']})"
        )
        if self._slice is None or self._slice.axis != axis:
            self._slice = plot.LiveSlice(plane, axis, index, h.layout)
            self.resolution = self._slice.pixels(self._slice.ax)  # what the image is drawn at
        self._picture(self.slice_image, self._slice.update(plane, index), frame)
        if self._error is None:
            self._error = plot.live_error(h.times, h.errors, width=4.0)
        self.error_image.value = self._error.update(h.times, [h.errors])

    def _draw_timings(self) -> None:
        self.timing_image.value = figure_to_png(plot.timings_figure(self.handle.last_timings, width=4.0), dpi=70)
