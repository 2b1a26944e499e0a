"""What the live solver panels (wave, CG, heat) share: a frame loop that adapts the steps per
frame to hold a steady frame rate, and the frame statistics it shows.

A frame is one round trip to the engines (steps plus the gathered picture, see
:meth:`mpiworkbench.drivers.solver_handle.SolverHandle.submit_frame`) and one in-place redraw
(see :class:`mpiworkbench.plot.render.LiveFigure`); the timing bars redraw every
:data:`TIMINGS_PERIOD_S` while playing.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from typing import Callable

from mpiworkbench.drivers.solver_handle import Frame
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION
from mpiworkbench.widgets.report import error_html

#: The frame rate Play aims at (the steps per frame adapt to it).
TARGET_FPS = 20.0
#: While playing, the timing bars redraw at most this often (seconds).
TIMINGS_PERIOD_S = 2.0
#: What a frame's time is split into, in the order shown.
PARTS = ("compute", "exchange", "transfer", "drawing")


class FrameStats:
    """The last *window* frames of a panel: frames/s, and the share of each part of a frame."""

    def __init__(self, window: int = 20):
        self.recent: deque[dict[str, float]] = deque(maxlen=window)
        #: Frames drawn since the panel was built.
        self.count = 0
        #: Of those, the frames whose main picture differed from the one before (a frame whose
        #: picture came out byte for byte the same sends nothing to the browser).
        self.pictures = 0

    def add(self, frame: Frame, drawing_s: float, total_s: float) -> None:
        """Record *frame*: *total_s* is the time since the previous frame was drawn (the
        frame period a viewer sees), *drawing_s* the part spent drawing this one."""
        self.recent.append({"steps": frame.steps, "compute": frame.compute_s, "exchange": frame.exchange_s,
                            "transfer": frame.transfer_s, "drawing": drawing_s, "total": total_s,
                            "bytes": frame.nbytes,
                            "overhead": max(0.0, total_s - frame.compute_s - frame.exchange_s)})
        self.count += 1

    def median(self, key: str) -> float:
        return statistics.median(f[key] for f in self.recent) if self.recent else 0.0

    @property
    def fps(self) -> float:
        total = self.median("total")
        return 1.0 / total if total > 0 else 0.0

    def shares(self) -> dict[str, float]:
        """Each part's share of the frames' summed parts (transfer and drawing overlap when
        the next frame steps while this one is drawn, so the parts can exceed the period)."""
        parts = {part: sum(f[part] for f in self.recent) for part in PARTS}
        total = sum(parts.values()) or 1.0
        return {part: value / total for part, value in parts.items()}

    def next_steps(self, k: int, target_s: float, most: int = 100_000) -> int:
        """Steps for the next frame so that it takes about *target_s*: what is left of the
        target after the frame's fixed overhead, over the seconds one step costs — at least
        1, at most twice *k* (a sudden fast frame must not overshoot). When the overhead
        alone exceeds the target, the solver still gets a fifth of each frame (a picture
        that hardly moves is no live view)."""
        per_step = [(f["compute"] + f["exchange"]) / f["steps"] for f in self.recent if f["steps"]]
        if not per_step:
            return k
        overhead = self.median("overhead")
        budget = max(target_s - overhead, overhead / 4)
        wanted = budget / max(statistics.median(per_step), 1e-9)
        return int(max(1, min(wanted, 2 * k, most)))

    def html(self, steps_per_frame: int) -> str:
        """One line: frames so far, frames/s, steps per frame, where the time goes."""
        if not self.recent:
            return f"frames {self.count} ({self.pictures} new pictures)"
        shares = " · ".join(f"{part} {share:.0%}" for part, share in self.shares().items())
        return (f"frames {self.count} ({self.pictures} new pictures) · <b>{self.fps:.1f} frames/s</b> · {steps_per_frame} step(s)/frame · "
                f"{shares} · beyond the solver {self.median('overhead') * 1e3:.0f} ms/frame")


#: Seconds :meth:`LivePanel.close` waits for a running frame to end.
CLOSE_WAIT_S = 60.0


def _widgets(values) -> list:
    """Every ipywidget in *values* (a panel's attributes: widgets, and lists, tuples and dicts
    of them) and below them (a box's children, a widget's layout and style), once each."""
    import ipywidgets as w

    found: dict[int, object] = {}
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, w.Widget):
            if id(value) not in found:
                found[id(value)] = value
                stack.extend(getattr(value, name, None) for name in value.keys)  # synced traits
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return list(found.values())


class LivePanel:
    """The frame loop of a live solver panel; subclasses build the widgets and say how to get
    a frame (:meth:`_frame`), draw it (:meth:`_draw`), draw the timing bars
    (:meth:`_draw_timings`) and when the solver is done (:meth:`_finished`)."""

    def __init__(self, handle):
        import ipywidgets as w

        self.handle = handle
        self.stats = FrameStats()
        self.steps_per_frame = 1
        self.frame_stats = w.HTML(self.stats.html(1))
        self._busy = threading.Lock()
        self._draw_lock = threading.RLock()
        self._thread: threading.Thread | None = None
        #: Points per side the engines reduce the picture to: the pixels the panel's image is
        #: drawn at, once its figure is laid out (a mesh at or below it comes exact).
        self.resolution: int | None = DEFAULT_RESOLUTION

    # -- subclass hooks ----------------------------------------------------------------
    def _submit(self, k: int):
        """Start a frame of *k* steps on the engines (the handle stays locked until :meth:`_finish`)."""
        return self.handle.submit_frame(k, self.resolution)

    def _finish(self, started) -> Frame:
        return self.handle.finish_frame(started)

    def _frame(self, k: int) -> Frame:
        return self._finish(self._submit(k))

    def _draw(self, frame: Frame) -> None:
        raise NotImplementedError

    def _draw_timings(self) -> None:
        raise NotImplementedError

    def _finished(self) -> bool:
        return False

    # -- frames ------------------------------------------------------------------------
    def show(self, frame: Frame) -> None:
        """Draw *frame* and the timing bars (a step a user asked for: everything is current)."""
        t0 = time.perf_counter()
        with self._draw_lock:
            self._draw(frame)
            self._draw_timings()
        self._count(frame, time.perf_counter() - t0, frame.round_trip_s + time.perf_counter() - t0)

    def play_frames(self, should_stop: Callable[[], bool], max_frames: int | None = None) -> int:
        """Frames until ``should_stop()``, the solver is done or *max_frames*; returns how many.

        Each frame takes :attr:`steps_per_frame` steps, adapted after every frame to hold
        :data:`TARGET_FPS`; the next frame is started on the engines before the last one
        is drawn, so the ranks step while the notebook draws. Every frame started is drawn.
        The timing bars redraw every :data:`TIMINGS_PERIOD_S`.
        """
        if should_stop() or self._finished() or max_frames == 0:
            return 0
        done = 0
        started = self._submit(self.steps_per_frame)
        last = timings_at = time.perf_counter()
        try:
            while started is not None:
                current, started = started, None
                frame = self._finish(current)
                done += 1
                if not (should_stop() or self._finished() or (max_frames is not None and done >= max_frames)):
                    self.steps_per_frame = self.stats.next_steps(self.steps_per_frame, 1.0 / TARGET_FPS)
                    started = self._submit(self.steps_per_frame)
                t0 = time.perf_counter()
                with self._draw_lock:
                    self._draw(frame)
                    if t0 - timings_at >= TIMINGS_PERIOD_S:
                        self._draw_timings()
                        timings_at = t0
                now = time.perf_counter()
                self._count(frame, now - t0, now - last)
                last = now
        finally:
            if started is not None:  # drawing failed: let the frame on its way finish (unlocks the handle)
                self._finish(started)
            with self._draw_lock:
                self._draw_timings()
        return done

    def restart_pacing(self) -> None:
        """A new solve (Reset) starts with frames of one step again, growing to the frame rate
        from there (at most doubling each frame): its first iterations are seen one by one, and
        a Stop clicked just after Run lands while the frames are still short."""
        self.steps_per_frame = 1

    def _picture(self, image, png: bytes, frame: bool = True) -> None:
        """Show *png* in the main picture's *image* widget; a *frame*'s new picture is counted."""
        if frame and png != image.value:
            self.stats.pictures += 1
        image.value = png

    def _count(self, frame: Frame, drawing_s: float, total_s: float) -> None:
        self.stats.add(frame, drawing_s, total_s)
        self.frame_stats.value = self.stats.html(frame.steps)

    # -- background work (the buttons' callbacks start these) --------------------------
    def _start(self, target: Callable[[], None], name: str) -> bool:
        """Run *target* in a thread unless one runs already; returns whether it started.
        *target* must release :attr:`_busy` when it ends."""
        if not self._busy.acquire(blocking=False):
            return False
        self._set_busy(True)
        self._thread = threading.Thread(target=target, name=name, daemon=True)
        self._thread.start()
        return True

    def _release(self) -> None:
        self._set_busy(False)
        self._busy.release()

    def _set_busy(self, busy: bool) -> None:
        raise NotImplementedError

    def _show_error(self, exc: BaseException, what: str = "step failed") -> None:
        self.status.value = error_html(exc, what)

    def wait(self, timeout: float | None = None) -> None:
        """Block until the background stepping has ended (for scripts and tests)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self, timeout: float | None = CLOSE_WAIT_S) -> None:
        """Stop stepping and close the panel's widgets. ipywidgets keeps every widget until it
        is closed, and through their callbacks the panel with its figures and pictures: a panel
        made again and again (a cell run many times) would pile up in the kernel's memory."""
        playing = getattr(self, "_playing", None)
        if playing is not None:
            playing.clear()
        self.wait(timeout)
        for widget in _widgets(vars(self).values()):
            widget.close()


class SteppingPanel(LivePanel):
    """A live panel with step buttons (``Step k`` for every *k* of :attr:`STEPS`) and a
    ``Play`` toggle (pressed = playing; Play ends by itself when the solver is done). Steps
    run in a worker thread; the step buttons are disabled while it runs."""

    STEPS: tuple[int, ...] = (1, 10, 100)
    #: The worker threads' names say whose they are.
    NAME = "solver"

    def __init__(self, handle):
        import ipywidgets as w

        super().__init__(handle)
        self._playing = threading.Event()
        self.buttons = {}
        for k in self.STEPS:
            button = w.Button(description=f"Step {k}", tooltip=f"advance {k} time step(s) on every rank")
            button.on_click(lambda _b, k=k: self.request_steps(k))
            self.buttons[button.description] = button
        self.play = w.ToggleButton(description="Play", value=False, icon="play",
                                   tooltip="Play / pause: step continuously")
        self.play.observe(lambda change: self.set_playing(change["new"]), names="value")

    def request_steps(self, k: int) -> bool:
        """Step *k* times in the background unless a step is already running; returns whether it started."""
        return self._start(lambda: self._run_steps(k), f"{self.NAME}-steps")

    def set_playing(self, playing: bool) -> None:
        """Start or pause continuous stepping."""
        if playing:
            self._playing.set()
            self.play.icon = "pause"
            self._start(self._play_loop, f"{self.NAME}-play")
        else:
            self._playing.clear()
            self.play.icon = "play"

    def _run_steps(self, k: int) -> None:
        try:
            self.show(self._frame(k))
        except Exception as exc:  # noqa: BLE001 - shown in the panel; the thread must not die silently
            self._show_error(exc)
        if self._playing.is_set():  # Play was pressed while these steps ran: keep the lock, play on
            self._play_loop()
        else:
            self._release()

    def _play_loop(self) -> None:
        try:
            self.play_frames(should_stop=lambda: not self._playing.is_set())
        except Exception as exc:  # noqa: BLE001
            self._show_error(exc)
        finally:
            self._playing.clear()
            self._release()
            self.play.value = False

    def _set_busy(self, busy: bool) -> None:
        # a click while steps run would be ignored: show it by disabling the step buttons
        for button in self.buttons.values():
            button.disabled = busy
