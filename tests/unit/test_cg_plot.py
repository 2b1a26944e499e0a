"""CG figures: data in, figure out (no MPI)."""

from __future__ import annotations

import numpy as np
import pytest

from mpiworkbench.plot import cg as plot
from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.solvers.cg import poisson
def test_residual_figure_is_log_scaled_with_the_stop_line():
    res = np.logspace(0, -8, 30)
    fig = plot.residual_figure(res, res**2, tol=1e-8, criterion="thesis")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert len(ax.lines) == 3  # residual, rho ratio, stop line
    assert ax.lines[2].get_ydata()[0] == 1e-8
    assert figure_to_png(fig).startswith(b"\x89PNG")


def test_residual_figure_of_a_fresh_solver():
    fig = plot.residual_figure([1.0])
    assert "0 iterations" in fig.axes[0].get_title()


def test_solution_error_figure_draws_every_rank_block():
    mesh = 12
    blocks = poisson.make_blocks(mesh, (3, 1))
    layout = [(b.i0, b.i1, b.j0, b.j1) for b in blocks]
    u = poisson.exact_solution(mesh)
    fig = plot.solution_error_figure(u, u * 1e-9, layout, iteration=7)
    field_axes = [ax for ax in fig.axes if ax.get_images()]
    assert len(field_axes) == 2
    for ax in field_axes:
        assert len(ax.lines) == 3  # one outline per rank
        assert sorted(t.get_text() for t in ax.texts) == ["rank 0", "rank 1", "rank 2"]
    assert "k = 7" in field_axes[0].get_title()
    single = plot.solution_error_figure(u, None, layout[:1])
    assert len([ax for ax in single.axes if ax.get_images()]) == 1


def test_timings_figure_stacks_the_four_categories_per_rank():
    per_rank = [
        {"matvec": 1.0, "exchange": 0.2, "allreduce": 0.1, "vector": 0.5, "iterations": 100},
        {"matvec": 0.9, "exchange": 0.3, "allreduce": 0.4, "vector": 0.5, "iterations": 100},
    ]
    fig = plot.timings_figure(per_rank)
    ax = fig.axes[0]
    assert len(ax.patches) == 8
    assert abs(max(p.get_x() + p.get_width() for p in ax.patches) - 21.0) < 1e-9  # ms per iteration
    assert [t.get_text() for t in ax.get_yticklabels()] == ["rank 0", "rank 1"]


def _live_solution(old: bool = False):
    from mpiworkbench.plot.render import LiveFigure, image_layers

    mesh = 65
    layout = [(b.i0, b.i1, b.j0, b.j1) for b in poisson.make_blocks(mesh, (2, 2))]
    u = poisson.exact_solution(mesh)
    live = plot.LiveSolution(u, 1e-3 * np.cos(7 * u / u.max()), layout, scale=float(u.max()), mesh=mesh)
    if old:  # every artist over the images redrawn per frame, as the labels once were
        layers = image_layers(*live.fields)
        LiveFigure.__init__(live, live.fig, layers["changing"] + layers["over"], dpi=80)
    return live, u


def test_rank_labels_over_the_images_are_composited_not_redrawn(monkeypatch):
    from matplotlib.text import Text

    live, u = _live_solution()
    assert not any(isinstance(a, Text) for a in live.changing)
    assert sorted(a.get_text() for a in live.over if isinstance(a, Text)) == sorted([f"rank {r}" for r in range(4)] * 2)
    live.update(u, 1e-3 * np.sin(7 * u / u.max()))  # the full draw renders the layer once
    drawn = []
    monkeypatch.setattr(Text, "draw", lambda self, renderer: drawn.append(self.get_text()))
    for k in range(3):  # blitted frames (the colour scales stay)
        live.update(u * (1 - 0.1 * k), 1e-3 * np.sin((7 + k) * u / u.max()))
    assert live.full_draws == 1 and drawn == []


def test_the_composited_frame_looks_as_drawing_everything_over_the_images():
    new, u = _live_solution()
    old, _ = _live_solution(old=True)
    bare, _ = _live_solution()
    bare._overlay = None
    bare.over = []  # nothing over the images at all
    for k in range(3):
        error = 1e-3 * np.sin((7 + k) * u / u.max())
        for live in (new, old, bare):
            live.update(u * (1 - 0.2 * k), error)
        new_px, old_px, bare_px = (np.asarray(live.canvas.buffer_rgba()).astype(int) for live in (new, old, bare))
        assert np.abs(new_px - old_px).max() <= 2  # Agg's rounding where the layer is partly covered
        # the labels and block edges are there: the layer changes many pixels of the bare images
        assert (np.abs(new_px - bare_px).max(axis=2) > 40).sum() > 200


def test_a_falling_log_history_grows_its_axis_so_full_redraws_stay_rare():
    from mpiworkbench.plot import render

    assert render._grown(1e-2, 1.0, 1e-3, 1.0, log=True) == pytest.approx((1e-5, 1.0))  # two decades more, at least
    fig = render.new_figure(4, 3)
    ax = fig.add_subplot()
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 1.0)
    redraws = 0
    for frame in range(1, 101):  # a residual falling three decades a frame, to 1e-300
        redraws += render.cover(ax, np.arange(2.0), np.array([1.0, 10.0 ** (-3 * frame)]))
        assert ax.get_ylim()[0] <= 10.0 ** (-3 * frame)
    assert redraws <= 15  # the span grows by half each time: logarithmically many, not one a frame
