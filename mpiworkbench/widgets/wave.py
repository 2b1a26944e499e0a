"""The live panel of the distributed 3-D wave solver (``wb.wave(mesh=65).widget()``).

Every action is a method of :class:`~mpiworkbench.client.wave.WaveHandle`; the buttons
only call them.
"""

from __future__ import annotations

import threading

from mpiworkbench.client.wave import WaveHandle


class WavePanel:
    """ipywidgets over a :class:`WaveHandle`; control descriptions are stable for browser tests.

    Buttons ``Step 1``, ``Step 10``, ``Step 100``, toggle ``Play`` (pressed = playing),
    dropdown ``Slice axis``, slider ``Slice index``. Steps run on the engines through
    asynchronous calls in a worker thread; the images redraw when each call returns.
    """

    STEP_LABELS = ("Step 1", "Step 10", "Step 100")
    #: Steps per round trip while playing.
    PLAY_CHUNK = 5

    def __init__(self, handle: WaveHandle):
        import ipywidgets as w

        self.handle = handle
        self._busy = threading.Lock()
        self._playing = threading.Event()
        self._thread: threading.Thread | None = None
        self.buttons = {}
        for label in self.STEP_LABELS:
            k = int(label.split()[1])
            button = w.Button(description=label, tooltip=f"advance {k} time step(s) on every rank")
            button.on_click(lambda _b, k=k: self.request_steps(k))
            self.buttons[label] = button
        self.play = w.ToggleButton(description="Play", value=False, icon="play", tooltip="Play / pause: step continuously")
        self.play.observe(lambda change: self.set_playing(change["new"]), names="value")
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
        self.widget = w.VBox(
            [
                w.HBox([*self.buttons.values(), self.play]),
                w.HBox([self.axis, self.index]),
                self.status,
                w.HBox([self.slice_image, w.VBox([self.error_image, self.timing_image])]),
            ]
        )
        self.refresh()

    # -- actions (callbacks only call these) -------------------------------------------
    def request_steps(self, k: int) -> bool:
        """Step *k* times in the background unless a step is already running; returns whether it started."""
        if not self._busy.acquire(blocking=False):
            return False
        self._show_busy(True)
        self._thread = threading.Thread(target=self._run_steps, args=(k,), name="wave-steps", daemon=True)
        self._thread.start()
        return True

    def set_playing(self, playing: bool) -> None:
        """Start or pause continuous stepping."""
        if playing:
            self._playing.set()
            self.play.icon = "pause"
            if self._busy.acquire(blocking=False):
                self._show_busy(True)
                self._thread = threading.Thread(target=self._play_loop, name="wave-play", daemon=True)
                self._thread.start()
        else:
            self._playing.clear()
            self.play.icon = "play"

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

    def wait(self, timeout: float | None = None) -> None:
        """Block until the background stepping has ended (for scripts and tests)."""
        if self._thread is not None:
            self._thread.join(timeout)

    # -- workers -----------------------------------------------------------------------
    def _run_steps(self, k: int) -> None:
        try:
            self.handle.step(k)
            self.refresh()
        except Exception as exc:  # noqa: BLE001 - shown in the panel; the thread must not die silently
            self._show_error(exc)
        if self._playing.is_set():  # Play was pressed while these steps ran: keep the lock, play on
            self._play_loop()
        else:
            self._show_busy(False)
            self._busy.release()

    def _play_loop(self) -> None:
        try:
            self.handle.run(should_stop=lambda: not self._playing.is_set(),
                            on_progress=lambda _h: self.refresh(), chunk=self.PLAY_CHUNK)
        except Exception as exc:  # noqa: BLE001
            self._show_error(exc)
            self._playing.clear()
        finally:
            self._show_busy(False)
            self._busy.release()
            self.play.value = False

    def _show_busy(self, busy: bool) -> None:
        # a click while steps run would be ignored: show it by disabling the step buttons
        for button in self.buttons.values():
            button.disabled = busy

    def _show_error(self, exc: BaseException) -> None:
        self.status.value = f"<b style='color:#b2182b'>step failed:</b> {type(exc).__name__}: {exc}"

    # -- drawing -----------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw status, slice, error history and timing bars from the handle."""
        from mpiworkbench.plot import wave as plot
        from mpiworkbench.plot.render import figure_to_png
        h = self.handle
        axis, index = self.axis.value, int(self.index.value)
        plane = h.slice(axis, index)
        self.status.value = (
            f"<b>steps = {h.steps}</b> &nbsp; t = {h.t:.4f} &nbsp; max|u − exact| = {h.errors[-1]:.3e} "
            f"&nbsp; (mesh {'x'.join(map(str, h.mesh))}, dims {'x'.join(map(str, h.dims))}, dt {h.dt:.4g}, "
            f"kernel {h.info['kernel']}, exchange {h.info['exchange']})"
        )
        self.slice_image.value = figure_to_png(plot.slice_figure(plane, axis, index, h.layout, t=h.t), dpi=80)
        self.error_image.value = figure_to_png(plot.error_figure(h.times, h.errors, width=4.0), dpi=70)
        self.timing_image.value = figure_to_png(plot.timings_figure(h.last_timings, width=4.0), dpi=70)
