"""What every notebook handle on an engine-side solver shares: build it, lock it, delete it,
and bring back one live frame per round trip."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from mpiworkbench.core import objects
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution


def field_frame(steps: int, gathered: Any, compute_s: float, exchange_s: float, wall: float) -> Frame:
    """A :class:`Frame` of what rank 0 gathered: a :class:`Picture` or a whole field."""
    if isinstance(gathered, Picture):
        return Frame(steps, gathered.values, compute_s, exchange_s, wall, gathered)
    return Frame(steps, gathered, compute_s, exchange_s, wall)


@dataclass
class Frame:
    """What one frame of a live panel brought back: the steps taken, the gathered picture, and
    where the time went (seconds).

    ``compute_s`` and ``exchange_s`` are those of the slowest rank during the frame's steps
    (its MPI communication: halo exchange, reductions); ``round_trip_s`` is the wall time of
    the frame's engine calls seen from the notebook, so ``transfer_s`` — the rest — is
    submitting, gathering and pulling the picture.
    """

    steps: int
    field: np.ndarray
    compute_s: float
    exchange_s: float
    round_trip_s: float
    #: What the engines sent: a reduced picture with the field's exact extremes, or ``None``
    #: when the frame asked for the whole field (``resolution=None``).
    picture: Picture | None = None

    @property
    def nbytes(self) -> int:
        """Bytes of the field the frame brought back (the picture's values)."""
        return int(np.asarray(self.field).nbytes)

    @property
    def transfer_s(self) -> float:
        return max(0.0, self.round_trip_s - self.compute_s - self.exchange_s)


def slowest(before: Sequence[dict], after: Sequence[dict], compute: Iterable[str],
            exchange: Iterable[str]) -> tuple[float, float]:
    """``(compute, exchange)`` seconds between two per-rank cumulative timings, of the rank
    that spent the most in both together."""
    compute, exchange = list(compute), list(exchange)
    best = (0.0, 0.0)
    for old, new in zip(before, after):
        c = sum(new.get(k, 0.0) - old.get(k, 0.0) for k in compute)
        e = sum(new.get(k, 0.0) - old.get(k, 0.0) for k in exchange)
        if c + e > sum(best):
            best = (c, e)
    return best


class SolverHandle:
    """A solver living on every engine of *wb*; subclasses set :attr:`factory` and :meth:`reset`.

    Calls into the solver hold :attr:`_lock`, so a panel's background thread and the
    notebook never interleave their requests.

    Parameters
    ----------
    wb
        The running session whose engines hold the solver.
    panel : callable, optional
        ``panel(handle)`` builds the live panel :meth:`widget` shows (an object with a
        ``widget`` attribute). The client never imports widgets: the
        :class:`~mpiworkbench.Workbench` that creates the handle passes its panel class.
    **options
        Keyword arguments of the engine-side solver.
    """

    factory: str = ""

    def __init__(self, wb, panel: Callable[["SolverHandle"], Any] | None = None, **options: Any):
        self.wb = wb
        self.panel = panel
        self.options = options
        self._obj = None
        self._lock = threading.Lock()
        self._shown = None  # the panel widget() made last
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def widget(self):
        """The live panel over this handle (step, play, the gathered field, timings). One per
        handle: the panel an earlier call made is closed (its widgets, figures and pictures
        would otherwise stay in memory for the kernel's life, a cell run again and again)."""
        if self.panel is None:
            raise RuntimeError(
                f"{type(self).__name__} was created without a panel; create it with wb.wave(...) / "
                "wb.cg(...) / wb.heat(...) on a mpiworkbench.Workbench to get one"
            )
        if self._shown is not None:
            self._shown.close()
        self._shown = self.panel(self)
        return self._shown.widget

    def _create(self):
        """A fresh solver on the engines (the previous one deleted), same options."""
        self.close()
        self._obj = self.wb.create(self.factory, **self.options)
        return self._obj

    def _submit(self, *calls: tuple) -> tuple[Any, float]:
        """Start the solver's methods ``(name, *args)``, in order, on every rank as one engine
        task; the handle stays locked until :meth:`_collect` (collectives never interleave)."""
        self._lock.acquire()
        try:
            ar = self.wb.run_async(objects.call_many, self._obj.key, [(name, tuple(args)) for name, *args in calls])
        except BaseException:
            self._lock.release()
            raise
        return ar, time.perf_counter()

    def _collect(self, pending: tuple[Any, float]) -> tuple[list[list[Any]], float]:
        """Wait for a :meth:`_submit` (bounded by ``wb.timeout``); every call's per-rank
        results and the wall seconds from submission to results."""
        ar, t0 = pending
        try:
            per_rank = self.wb.gather(ar)
        finally:
            self._lock.release()
        return [list(results) for results in zip(*per_rank)], time.perf_counter() - t0

    def _calls(self, *calls: tuple) -> tuple[list[list[Any]], float]:
        """:meth:`_submit` then :meth:`_collect`: one round trip for several calls."""
        return self._collect(self._submit(*calls))

    # -- live frames: one round trip each, startable ahead of drawing the previous one -----
    def _frame_calls(self, k: int, resolution: int | None = DEFAULT_RESOLUTION, **where: Any) -> list[tuple]:
        raise NotImplementedError

    def _frame_result(self, results: list[list[Any]], wall: float, before: tuple) -> Frame:
        raise NotImplementedError

    def _frame_before(self) -> tuple:
        """What a frame's result is measured against (timings and step count before it)."""
        raise NotImplementedError

    def submit_frame(self, k: int, resolution: int | None = DEFAULT_RESOLUTION, **where: Any) -> tuple:
        """Start a frame of *k* steps on the engines; :meth:`finish_frame` waits for it.

        The engines send a picture of at most *resolution* points per side (each rank
        reduces its block first; :mod:`mpiworkbench.solvers.picture`), or the whole field
        for ``None`` (what every frame pulled before; kept to measure against). A live panel
        starts the next frame before it draws the last one, so the engines step while the
        notebook draws. Until it is finished the handle is locked.
        """
        check_resolution(resolution)  # here, not as a failed engine task
        return self._submit(*self._frame_calls(k, resolution=resolution, **where)), self._frame_before()

    def finish_frame(self, started: tuple) -> Frame:
        """Wait for a :meth:`submit_frame` and record what it brought back."""
        pending, before = started
        results, wall = self._collect(pending)
        return self._frame_result(results, wall, before)

    def close(self) -> None:
        """Delete the solver on the engines (which calls its ``close()``)."""
        if self._obj is not None:
            self._obj.delete()
            self._obj = None
