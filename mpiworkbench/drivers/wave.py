"""The notebook's handle on a distributed 3-D wave solver living on the engines.

The solver (:class:`mpiworkbench.solvers.wave.solver.WaveSolver`) lives on every engine;
this handle steps it with asynchronous calls and pulls only what rank 0 gathered by MPI (a
2-D slice, the whole field on request). Every action of the wave panel (step, play, slice)
is a method here first; the panel only calls them from its buttons and worker thread.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from mpiworkbench.client.calls.trace import trace_steps
from mpiworkbench.drivers.solver_handle import Frame, SolverHandle, field_frame, slowest
from mpiworkbench.solvers.decomposition import decompose
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution

FACTORY = "mpiworkbench.solvers.wave.solver:WaveSolver"


class WaveHandle(SolverHandle):
    """A wave solver on every engine of *wb*; keyword arguments go to ``WaveSolver``.

    Examples
    --------
    >>> w = wb.wave(mesh=65, kernel="numba")   # doctest: +SKIP
    >>> w.step(10); w.error()                  # doctest: +SKIP
    >>> plane = w.slice("z", 32)               # doctest: +SKIP
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
        """Submit *k* steps on every rank; returns the pending call (a :class:`~mpiworkbench.client.calls.call.Call`).

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
        return self._record(reports)

    def _record(self, reports: list[dict[str, Any]]) -> dict[str, Any]:
        head = reports[0]
        self.steps = int(head["steps"])
        self.times.append(float(head["t"]))
        self.errors.append(float(head["error"]))
        self.last_timings = [{k: r[k] for k in ("rank", "coords", "steps", "compute_s", "exchange_s")} for r in reports]
        return {"steps": self.steps, "t": head["t"], "error": head["error"]}

    def frame(self, k: int, axis: int | str = "z", index: int | None = None,
              resolution: int | None = DEFAULT_RESOLUTION) -> Frame:
        """Step *k* times and gather the plane *index* (default: the middle) along *axis*, in
        one round trip (what each frame of the panel's **Play** does).

        The plane comes as a picture of at most *resolution* points per side (block means,
        each rank reducing its part first; the plane's exact extremes in ``frame.picture``),
        or whole for ``None``. At or below *resolution* it is the plane itself.

        Returns
        -------
        Frame
            The plane, the steps taken and the slowest rank's compute and exchange seconds.
        """
        return self.finish_frame(self.submit_frame(k, resolution, axis=axis, index=index))

    def _index(self, axis: int | str, index: int | None) -> int:
        if index is None:
            return self.mesh["xyz".index(axis) if isinstance(axis, str) else int(axis)] // 2
        return int(index)

    def _frame_calls(self, k: int, resolution: int | None = DEFAULT_RESOLUTION, axis: int | str = "z",
                     index: int | None = None) -> list[tuple]:
        index = self._index(axis, index)
        if resolution is None:
            return [("advance", int(k)), ("gather_slice", axis, index)]
        return [("advance", int(k)), ("slice_picture", axis, index, resolution)]

    def _frame_before(self) -> tuple:
        return self.last_timings, self.steps

    def _frame_result(self, results, wall: float, before: tuple) -> Frame:
        (reports, planes), (timings, steps) = results, before
        self._record(reports)
        compute, exchange = slowest(timings, self.last_timings, ["compute_s"], ["exchange_s"])
        return field_frame(self.steps - steps, planes[0], compute, exchange, wall)

    def step(self, k: int = 1) -> dict[str, Any]:
        """Advance *k* time steps on every rank.

        Returns
        -------
        dict
            ``{"steps", "t", "error"}`` after the steps (also appended to :attr:`times`,
            :attr:`errors`; per-rank timings in :attr:`last_timings`).
        """
        return self.collect(self.step_async(k))

    def trace(self, steps: int = 3):
        """Take *steps* time steps with every rank's MPI calls recorded; returns the
        :class:`~mpiworkbench.trace.Trace` (the halo exchange as a timeline, its messages)."""
        return trace_steps(self.wb, self.step, steps)

    def run(self, should_stop: Callable[[], bool], on_progress: Callable[["WaveHandle"], None] | None = None,
            chunk: int = 5) -> dict[str, Any] | None:
        """Step *chunk* steps at a time until ``should_stop()`` (what the panel's **Play** does).

        Parameters
        ----------
        should_stop : callable
            Asked before every chunk.
        on_progress : callable, optional
            ``on_progress(self)`` after every chunk (a panel redraws).
        chunk : int
            Steps per round trip to the engines.

        Returns
        -------
        dict or None
            The last chunk's :meth:`step` report (``None`` if none ran).
        """
        report = None
        while not should_stop():
            report = self.step(chunk)
            if on_progress is not None:
                on_progress(self)
        return report

    # -- inspection --------------------------------------------------------------------
    @property
    def t(self) -> float:
        """The simulated time reached (of the last step)."""
        return self.times[-1]

    def slice(self, axis: int | str = "z", index: int | None = None) -> np.ndarray:
        """The plane *index* (default: the middle) along *axis*, gathered to rank 0 by MPI."""
        if index is None:
            a = "xyz".index(axis) if isinstance(axis, str) else int(axis)
            index = self.mesh[a] // 2
        with self._lock:
            return self._obj.root("gather_slice", axis, int(index))

    def picture(self, axis: int | str = "z", index: int | None = None,
                resolution: int = DEFAULT_RESOLUTION) -> Picture:
        """The plane as a screen shows it: at most *resolution* points per side (block means,
        reduced on the ranks before the gather) and its exact extremes. :meth:`slice` is exact."""
        check_resolution(resolution)
        with self._lock:
            return self._obj.root("slice_picture", axis, self._index(axis, index), resolution)

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

    def __repr__(self) -> str:
        mesh = "x".join(map(str, self.mesh))
        return (
            f"<WaveHandle mesh={mesh} dims={'x'.join(map(str, self.dims))} steps={self.steps} "
            f"t={self.t:.4f} error={self.errors[-1]:.3e}>"
        )
