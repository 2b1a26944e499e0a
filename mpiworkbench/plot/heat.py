"""Figures of the heat-diffusion solver: the field with the ranks' strips of rows, the
convergence history, the time per rank; live versions redraw in place.

Pure functions: data in, :class:`matplotlib.figure.Figure` out (no pyplot state).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from mpiworkbench.plot.render import LiveCurves, LiveFigure, image_layers, new_figure

#: Timing categories of ``HeatSolver.timings`` in stacking order, with their colours.
TIMING_COLOURS = {"compute": "#4393c3", "exchange": "#f4a582", "allreduce": "#7570b3"}


def field_figure(field: np.ndarray, rows: Sequence[tuple[int, int]] | None = None, *, vmin: float = 0.0,
                 vmax: float = 1.0, title: str = "temperature", width: float = 5.0, height: float = 3.6) -> Figure:
    """The ``M × N`` field (row 0 on top, as the report draws the cylinder), each rank's strip
    of rows outlined by dashed lines and labelled. *rows* are the strips' rows of the grid; the
    field may be a picture of it with fewer rows (reduced to the screen): the strips are then
    placed in proportion."""
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    m, n = np.shape(field)
    im = ax.imshow(field, cmap="inferno", vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    scale = m / rows[-1][1] if rows else 1.0  # picture rows per grid row
    for rank, (start, stop) in enumerate(rows or []):
        if rank:
            ax.axhline(start * scale - 0.5, color="white", ls="--", lw=1.0)
        if len(rows) > 1:
            ax.text(0.02 * n, (start + stop) / 2 * scale - 0.5, f"rank {rank}", color="white", va="center", fontsize=8)
    ax.set_xlabel("column (wraps around)")
    ax.set_ylabel("row (split over the ranks)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="temperature")
    return fig


class LiveField(LiveFigure):
    """:func:`field_figure` kept alive: per frame the field is redrawn; the strips' dashed
    edges, their "rank N" labels and the frame over it are rendered once, a layer composited
    over the field (*over* of :class:`~mpiworkbench.plot.render.LiveFigure`). Title, axes and
    colour bar (its scale is fixed) stay."""

    def __init__(self, field: np.ndarray, rows=None, dpi: int = 80, **kwargs):
        fig = field_figure(field, rows, **kwargs)
        self.ax = fig.axes[0]
        super().__init__(fig, dpi=dpi, **image_layers(self.ax))

    def update(self, field: np.ndarray) -> bytes:
        self.ax.images[0].set_data(field)
        return self.png()


def history_figure(steps: Sequence[int], deltas: Sequence[float], errors: Sequence[float], tol: float | None = None,
                   width: float = 4.6) -> Figure:
    """Largest change per step (what stops the run at *tol*) and the distance from the exact
    steady state, against the step, log scale."""
    fig = new_figure(width, width * 0.7)
    ax = fig.add_subplot()
    steps = np.asarray(steps, dtype=float)
    for values, colour, label in ((deltas, "C0", "largest change per step"), (errors, "C3", "max |u − steady state|")):
        values = np.asarray(values, dtype=float)
        ax.semilogy(steps, np.where((values > 0) & np.isfinite(values), values, np.nan), ".-", color=colour,
                    ms=3, label=label)
    if tol is not None:
        ax.axhline(tol, color="C0", ls="--", lw=0.9, label=f"tol {tol:g}")
    ax.set_xlim(0, max(1.0, float(steps.max(initial=0))))
    ax.set_xlabel("step")
    ax.set_title("convergence (Allreduce MAX)", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return fig


def live_history(steps, deltas, errors, tol: float | None = None, width: float = 4.6, dpi: int = 70) -> LiveCurves:
    """:func:`history_figure` kept alive: ``.update(steps, [deltas, errors])`` extends it."""
    fig = history_figure(steps, deltas, errors, tol, width)
    ax = fig.axes[0]
    ax.set_ylim(0.1 * tol if tol else 1e-6, 1.0)  # both fall from at most 1 towards tol
    ax.set_xlim(0, max(64, float(np.max(steps, initial=0))))
    return LiveCurves(fig, ax.lines[:2], dpi=dpi)


def timings_figure(per_rank: Sequence[Mapping[str, float]], steps: int, width: float = 4.6) -> Figure:
    """Stacked horizontal bars: each rank's milliseconds per step in compute, exchange, allreduce."""
    nranks = len(per_rank)
    fig = new_figure(width, max(1.8, 0.9 + 0.45 * nranks))
    ax = fig.add_subplot()
    left = np.zeros(nranks)
    for key, colour in TIMING_COLOURS.items():
        values = np.array([t.get(key, 0.0) for t in per_rank], dtype=float) / max(1, steps) * 1e3
        ax.barh(np.arange(nranks), values, left=left, color=colour, label=key)
        left += values
    ax.set_yticks(np.arange(nranks), [f"rank {r}" for r in range(nranks)])
    ax.invert_yaxis()
    ax.set_xlabel("ms per step")
    if not left.max(initial=0.0) > 0:
        ax.set_xlim(0, 1)
    ax.legend(ncols=3, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return fig
