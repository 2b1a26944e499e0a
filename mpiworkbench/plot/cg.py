"""Figures of a CG run: residual history, solution/error with the partition, time per rank.

Data in, :class:`~matplotlib.figure.Figure` out (no pyplot state), so the widget can
re-render them live and the notebook can call them on saved results.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure

from mpiworkbench.plot.render import LiveCurves, LiveFigure, image_layers, new_figure, nice_ceiling
#: Timing categories in stacking order, with their colours.
TIMING_COLOURS = {"matvec": "#1b9e77", "exchange": "#d95f02", "allreduce": "#7570b3", "vector": "#e7298a"}


def residual_figure(
    residuals: Sequence[float],
    rho_ratios: Sequence[float] | None = None,
    *,
    tol: float | None = None,
    criterion: str = "relative",
    width: float = 5.0,
    height: float = 3.4,
) -> Figure:
    """``‖r_k‖/‖b‖`` (and ``ρ_k/ρ_0``) against the iteration on a log axis.

    The dashed line is where the chosen criterion stops: ``tol`` on ``ρ_k/ρ_0`` for the
    thesis criterion, on ``‖r_k‖/‖b‖`` for the relative one.
    """
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    k = np.arange(len(residuals))
    res = np.asarray(residuals, dtype=float)
    ax.semilogy(k, np.where(res > 0, res, np.nan), color="C0", lw=1.4, label=r"$\|r_k\|/\|b\|$")
    if rho_ratios is not None:
        rho = np.asarray(rho_ratios, dtype=float)
        ax.semilogy(k, np.where(rho > 0, rho, np.nan), color="C1", lw=1.0, alpha=0.8, label=r"$\rho_k/\rho_0$")
    if tol is not None:
        colour = "C1" if criterion == "thesis" else "C0"
        ax.axhline(tol, color=colour, ls="--", lw=0.9, label=f"stop: {criterion} tol {tol:g}")
    ax.set_xlabel("iteration k")
    ax.set_ylabel("residual (log)")
    ax.set_xlim(0, max(1, len(res) - 1))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"CG residual, {max(0, len(res) - 1)} iterations", fontsize=10)
    return fig


def _draw_partition(ax, mesh: int, layout: Sequence[Sequence[int]]) -> None:
    """Block edges of every rank, in the image's physical coordinates, labelled by rank."""
    h = 1.0 / (mesh + 1)
    for rank, (i0, i1, j0, j1) in enumerate(layout):
        x0, x1 = (j0 + 0.5) * h, (j1 + 0.5) * h
        y0, y1 = (i0 + 0.5) * h, (i1 + 0.5) * h
        ax.plot([x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0], color="white", lw=0.9, alpha=0.9)
        ax.text((x0 + x1) / 2, (y0 + y1) / 2, f"rank {rank}", color="white", ha="center", va="center", fontsize=8)


def _field(ax, fig, u: np.ndarray, layout, title: str, cmap: str, symmetric: bool, mesh: int | None = None) -> None:
    # a reduced picture has fewer points than the mesh: place it (and the blocks) by the mesh
    mesh = u.shape[0] if mesh is None else mesh
    h = 1.0 / (mesh + 1)
    extent = (0.5 * h, (mesh + 0.5) * h, 0.5 * h, (mesh + 0.5) * h)
    if symmetric:
        vmax = float(np.max(np.abs(u))) or 1.0
        im = ax.imshow(u, origin="lower", extent=extent, cmap=cmap, vmin=-vmax, vmax=vmax)
    else:
        im = ax.imshow(u, origin="lower", extent=extent, cmap=cmap)
    if layout is not None and len(layout) > 1:
        _draw_partition(ax, mesh, layout)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.85, format="%.1e" if symmetric else None)


def solution_error_figure(
    u: np.ndarray,
    error: np.ndarray | None = None,
    layout: Sequence[Sequence[int]] | None = None,
    *,
    iteration: int | None = None,
    width: float = 8.0,
    height: float = 3.4,
    mesh: int | None = None,
) -> Figure:
    """The solution (and its error against the exact one, when known), rank blocks drawn.

    *mesh* is the solver's (default: the arrays' size); give it when *u* is a reduced picture
    (:mod:`mpiworkbench.solvers.picture`), so the image and the rank blocks sit on the mesh.
    """
    panels = 1 if error is None else 2
    fig = new_figure(width if panels == 2 else width / 2 + 0.5, height)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    suffix = "" if iteration is None else f" (k = {iteration})"
    _field(axes[0], fig, u, layout, "solution $x_k$" + suffix, "viridis", False, mesh)
    if error is not None:
        emax = float(np.max(np.abs(error)))
        _field(axes[1], fig, error, layout, f"error $x_k - u$, max {emax:.1e}", "RdBu_r", True, mesh)
    return fig


def live_residual(residuals, rho_ratios=None, *, tol: float | None = None, criterion: str = "relative",
                  width: float = 5.0, dpi: int = 80) -> LiveCurves:
    """:func:`residual_figure` kept alive: ``.update(k, [residuals, rho_ratios])`` extends the
    curves (the title stays; the iteration count is in the panel's status line)."""
    fig = residual_figure(residuals, rho_ratios, tol=tol, criterion=criterion, width=width)
    ax = fig.axes[0]
    ax.set_title("CG residual", fontsize=10)
    if tol is not None:  # the run ends near tol (ρ_k/ρ_0 ~ residual²): room for all of it at once
        ax.set_ylim(max(1e-20, 0.1 * min(tol, tol**2 if rho_ratios is not None else tol)), 10.0)
    ax.set_xlim(0, max(64, len(residuals)))
    return LiveCurves(fig, ax.lines[: 1 if rho_ratios is None else 2], dpi=dpi)


class LiveSolution(LiveFigure):
    """:func:`solution_error_figure` kept alive: per frame the images are redrawn; the rank
    blocks, their labels and the frames over them are rendered once, a layer composited over
    the images (*over* of :class:`~mpiworkbench.plot.render.LiveFigure`). Colour scales move
    in steps (the solution's 1-2-5, the error's whole decades), each step one full redraw; the
    titles name the fields (iteration and max error are in the panel's status line)."""

    def __init__(self, u: np.ndarray, error: np.ndarray | None = None, layout=None, dpi: int = 80,
                 scale: float | None = None, **kwargs):
        #: The solution's colour scale stays at ``scale`` (the exact solution's maximum, when
        #: known) with a tenth's margin either side: the iterate fills it in as CG converges.
        self.scale = scale
        fig = solution_error_figure(u, error, layout, **kwargs)
        self.fields = [ax for ax in fig.axes if ax.images]
        for ax in self.fields:  # a smooth field: nearest pixels, not the costly anti-aliasing filter
            ax.images[0].set_interpolation("nearest")
        self.fields[0].set_title("solution $x_k$", fontsize=10)
        if error is not None:
            self.fields[1].set_title("error $x_k - u$", fontsize=10)
        super().__init__(fig, dpi=dpi, **image_layers(*self.fields))

    def update(self, u: np.ndarray, error: np.ndarray | None = None,
               extremes: tuple[float, float] | None = None) -> bytes:
        """The PNG of *u* (and *error*); *extremes* are the whole field's minimum and maximum
        when *u* is a reduced picture (its bin means never reach them), for the colour scale."""
        for ax, data, symmetric in zip(self.fields, (u, error), (False, True)):
            image = ax.images[0]
            image.set_data(data)
            if symmetric:  # whole decades: the error falls over many as CG converges
                top = 10.0 ** math.ceil(math.log10(max(float(np.max(np.abs(data))), 1e-300)))
                clim = (-top, top)
            else:
                lo, hi = (float(np.min(data)), float(np.max(data))) if extremes is None else extremes
                if self.scale and -0.1 * self.scale <= lo and hi <= 1.1 * self.scale:
                    clim = (-0.1 * self.scale, 1.1 * self.scale)  # iterates over- and undershoot a little
                else:
                    top = nice_ceiling(hi) if hi > 0 else 1.0
                    # a negative dip under a thousandth of the scale keeps the bottom at 0 (clipped)
                    clim = (-nice_ceiling(-lo) if lo < -1e-3 * top else 0.0, top)
            if tuple(image.get_clim()) != clim:
                image.set_clim(*clim)
                self.invalidate()
        return self.png()


def timings_figure(
    per_rank: Sequence[Mapping[str, float]],
    *,
    per_iteration: bool = True,
    width: float = 5.0,
    height: float | None = None,
) -> Figure:
    """Stacked horizontal bars: each rank's time in matvec, exchange, allreduce and vector ops.

    With *per_iteration*, times are divided by the iterations run (milliseconds per iteration).
    """
    nranks = len(per_rank)
    fig = new_figure(width, height or max(1.8, 0.9 + 0.45 * nranks))
    ax = fig.add_subplot()
    left = np.zeros(nranks)
    for key, colour in TIMING_COLOURS.items():
        values = np.array([t.get(key, 0.0) for t in per_rank], dtype=float)
        if per_iteration:
            its = np.array([max(1, int(t.get("iterations", 1))) for t in per_rank])
            values = values / its * 1e3
        ax.barh(np.arange(nranks), values, left=left, color=colour, label=key)
        left += values
    ax.set_yticks(np.arange(nranks), [f"rank {r}" for r in range(nranks)])
    ax.invert_yaxis()
    ax.set_xlabel("ms per iteration" if per_iteration else "seconds")
    ax.legend(ncols=4, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    if not math.isfinite(float(left.max(initial=0.0))) or left.max(initial=0.0) == 0:
        ax.set_xlim(0, 1)
    return fig
