"""CG figures: data in, figure out (no MPI)."""

from __future__ import annotations

import numpy as np

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
