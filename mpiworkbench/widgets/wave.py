"""Notebook handle and live panel for the distributed 3-D wave solver (``wb.wave(mesh=65)``).

The solver (:class:`mpiworkbench.solvers.wave.solver.WaveSolver`) lives on the engines; this
handle steps it with asynchronous calls and pulls only what rank 0 gathered by MPI (a
2-D slice, the whole field on request). Every action of the panel is a method of
:class:`WaveHandle` first; the buttons only call them.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from mpiworkbench.client.solver_handle import SolverHandle
from mpiworkbench.solvers.decomposition import decompose
FACTORY = "mpiworkbench.solvers.wave.solver:WaveSolver"


class WaveHandle(SolverHandle):
    """A wave solver on every engine of *wb*; keyword arguments go to ``WaveSolver``.

    >>> w = wb.wave(mesh=65, kernel="numba")   # doctest: +SKIP
    >>> w.step(10); w.error()
    >>> plane = w.slice("z", 32)
    """

    factory = FACTORY

    def __init__(self, wb, mesh: Any = 65, **options: Any):
        super().__init__(wb, mesh=mesh, **options)

    # -- life cycle --------------------------------------------------------------------
    def reset(self) -> None:
        """A fresh solver at t = 0 on the engines, same options."""
        self._create()
        info = self._obj.root("info")
        self.info = info
        self.mesh = tuple(info["mesh"])
        self.dims = tuple(info["dims"])
        self.dt = float(info["dt"])
        #: The decomposition, rebuilt client-side (pure Python) to draw block boundaries.
        self.layout = decompose(self.mesh, int(np.prod(self.dims)), self.dims)
        self.times: list[float] = [0.0]
        self.errors: list[float] = [self._obj.root("error")]
        self.steps = 0
        self.last_timings: list[dict[str, Any]] = self._obj.call("timings")

    # -- stepping ----------------------------------------------------------------------
    def step_async(self, k: int = 1):
        """Submit *k* steps on every rank; returns the ipyparallel AsyncResult.

        Finish it with :meth:`collect`. Only one submission may be pending at a time
        (the handle's lock is held until :meth:`collect`), so collectives never interleave.
        """
        self._lock.acquire()
        try:
            return self._obj.call_async("advance", int(k))
        except BaseException:
            self._lock.release()
            raise

    def collect(self, ar) -> dict[str, Any]:
        """Wait for a :meth:`step_async` result and record time, error and timings."""
        try:
            reports = self.wb.gather(ar)
        finally:
            self._lock.release()
        head = reports[0]
        self.steps = int(head["steps"])
        self.times.append(float(head["t"]))
        self.errors.append(float(head["error"]))
        self.last_timings = [{k: r[k] for k in ("rank", "coords", "steps", "compute_s", "exchange_s")} for r in reports]
        return {"steps": self.steps, "t": head["t"], "error": head["error"]}

    def step(self, k: int = 1) -> dict[str, Any]:
        """Advance *k* time steps on every rank; returns ``{"steps", "t", "error"}``."""
        return self.collect(self.step_async(k))

    # -- inspection --------------------------------------------------------------------
    @property
    def t(self) -> float:
        return self.times[-1]

    def slice(self, axis: int | str = "z", index: int | None = None) -> np.ndarray:
        """The plane *index* (default: the middle) along *axis*, gathered to rank 0 by MPI."""
        if index is None:
            a = "xyz".index(axis) if isinstance(axis, str) else int(axis)
            index = self.mesh[a] // 2
        with self._lock:
            return self._obj.root("gather_slice", axis, int(index))

    def field(self) -> np.ndarray:
        """The whole current field (gathered to rank 0 by MPI; mind the size)."""
        with self._lock:
            return self._obj.root("gather")

    def error(self) -> float:
        """``max |u − exact|`` now (computed on the engines, one allreduce)."""
        with self._lock:
            return float(self._obj.root("error"))

    def energy(self) -> float:
        """The conserved discrete energy (see ``WaveSolver.energy``)."""
        with self._lock:
            return float(self._obj.root("energy"))

    def timings(self) -> list[dict[str, Any]]:
        """Per-rank cumulative compute and exchange seconds (rank order)."""
        with self._lock:
            self.last_timings = self._obj.call("timings")
        return self.last_timings

    def widget(self):
        """A live panel: step buttons, play/pause, slice controls, slice, error, timings."""
        return WavePanel(self).widget

    def __repr__(self) -> str:
        mesh = "x".join(map(str, self.mesh))
        return (
            f"<WaveHandle mesh={mesh} dims={'x'.join(map(str, self.dims))} steps={self.steps} "
            f"t={self.t:.4f} error={self.errors[-1]:.3e}>"
        )


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
            while self._playing.is_set():
                self.handle.step(self.PLAY_CHUNK)
                self.refresh()
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
