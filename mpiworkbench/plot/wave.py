"""Figures of the 3-D wave solver: a slice with subdomain boundaries, error vs time, timings.

Pure functions: data in, :class:`matplotlib.figure.Figure` out (no pyplot state).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure

from mpiworkbench.plot.render import LiveCurves, LiveFigure, image_layers, new_figure
from mpiworkbench.solvers.decomposition import Decomposition
AXES = ("x", "y", "z")


def _axis_index(axis: int | str) -> int:
    return AXES.index(axis) if isinstance(axis, str) else int(axis)


def slice_figure(
    plane: np.ndarray,
    axis: int | str,
    index: int,
    layout: Decomposition | None = None,
    t: float | None = None,
    vmax: float = 2.0,
    title: str | None = None,
    width: float = 4.6,
) -> Figure:
    """The plane *index* along *axis* as an image on the unit square, subdomain cuts dashed.

    *plane* is indexed ``[a, b]`` over the two remaining axes in order (``x, y`` for a
    ``z`` slice); the first is drawn horizontally. Boundaries between blocks are drawn
    half-way between the last point of one block and the first of the next.
    """
    a_i = _axis_index(axis)
    first, second = (ax for ax in range(3) if ax != a_i)
    fig = new_figure(width, width * 0.85)
    ax = fig.add_subplot()
    image = ax.imshow(
        np.asarray(plane).T, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r", vmin=-vmax, vmax=vmax,
        interpolation="nearest",
    )
    fig.colorbar(image, ax=ax, shrink=0.85, label="u")
    if layout is not None:
        for axis_drawn, draw in ((first, ax.axvline), (second, ax.axhline)):
            h = 1.0 / (layout.shape[axis_drawn] - 1)
            for cut in layout.cuts(axis_drawn):
                draw((cut - 0.5) * h, color="k", lw=1.2, ls="--")
    ax.set_xlabel(AXES[first])
    ax.set_ylabel(AXES[second])
    ax.set_title(slice_title(axis, index, layout, t) if title is None else title, fontsize=9)
    return fig


def slice_title(axis: int | str, index: int, layout: Decomposition | None = None, t: float | None = None) -> str:
    """The title of :func:`slice_figure`: which plane, when, on which process grid."""
    dims = "" if layout is None else f", dims {'x'.join(map(str, layout.dims))}"
    when = "" if t is None else f", t = {t:.4f}"
    return f"u on {AXES[_axis_index(axis)]} index {index}{when}{dims}"


class LiveSlice(LiveFigure):
    """:func:`slice_figure` kept alive: per frame the plane is redrawn; the block cuts and the
    frame over it are rendered once, a layer composited over the plane (*over* of
    :class:`~mpiworkbench.plot.render.LiveFigure`). Axes, colour bar (its scale is fixed) and
    title stay; the title names the plane (a new index redraws all once), the panel's status
    line the time. A new axis needs a new ``LiveSlice``."""

    def __init__(self, plane: np.ndarray, axis: int | str, index: int, layout: Decomposition | None = None,
                 dpi: int = 80, **kwargs):
        self.axis, self.layout, self.index = axis, layout, index
        fig = slice_figure(plane, axis, index, layout, **kwargs)
        self.ax = fig.axes[0]
        super().__init__(fig, dpi=dpi, **image_layers(self.ax))

    def update(self, plane: np.ndarray, index: int) -> bytes:
        """The PNG of *plane*, the slice at *index* along this slice's axis."""
        self.ax.images[0].set_data(np.asarray(plane).T)
        if index != self.index:
            self.index = index
            self.ax.title.set_text(slice_title(self.axis, index, self.layout))
            self.invalidate()
        return self.png()


def error_figure(times: Sequence[float], errors: Sequence[float], width: float = 4.6) -> Figure:
    """``max |u − exact|`` against time, log scale."""
    fig = new_figure(width, width * 0.7)
    ax = fig.add_subplot()
    times = np.asarray(times, dtype=float)
    errors = np.asarray(errors, dtype=float)
    shown = errors > 0
    ax.semilogy(times[shown], errors[shown], ".-", color="#b2182b")
    ax.set_xlabel("t")
    ax.set_ylabel("max |u − exact|")
    ax.set_title("error against the exact solution", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return fig


def live_error(times: Sequence[float], errors: Sequence[float], width: float = 4.6, dpi: int = 70) -> LiveCurves:
    """:func:`error_figure` kept alive: ``.update(times, [errors])`` extends the curve."""
    fig = error_figure(times, errors, width)
    ax = fig.axes[0]
    ax.set_xlim(0, max(float(np.max(times, initial=0.0)), 0.05))
    return LiveCurves(fig, ax.lines, dpi=dpi)


def timings_figure(timings: Sequence[dict], width: float = 4.6) -> Figure:
    """Per-rank compute and exchange seconds as stacked bars (from ``WaveSolver.timings``)."""
    fig = new_figure(width, width * 0.7)
    ax = fig.add_subplot()
    ranks = [t["rank"] for t in timings]
    compute = np.array([t["compute_s"] for t in timings])
    exchange = np.array([t["exchange_s"] for t in timings])
    ax.bar(ranks, compute, color="#4393c3", label="compute")
    ax.bar(ranks, exchange, bottom=compute, color="#f4a582", label="exchange (incl. waiting)")
    ax.set_xticks(ranks)
    ax.set_xlabel("rank")
    ax.set_ylabel("seconds")
    steps = timings[0]["steps"] if timings else 0
    ax.set_title(f"time per rank over {steps} steps", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def convergence_figure(h: Sequence[float], errors: Sequence[float], width: float = 4.6) -> Figure:
    """Error against mesh spacing on log-log axes with an ``h²`` reference line."""
    fig = new_figure(width, width * 0.75)
    ax = fig.add_subplot()
    h = np.asarray(h, dtype=float)
    errors = np.asarray(errors, dtype=float)
    ax.loglog(h, errors, "o-", label="measured")
    ax.loglog(h, errors[0] * (h / h[0]) ** 2, "k--", label="∝ h²")
    ax.set_xlabel("h")
    ax.set_ylabel("max |u − exact|")
    ax.legend(fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    return fig
