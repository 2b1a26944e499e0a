"""Wave figures: pure functions that draw what they are given (no MPI, no cluster)."""

import numpy as np

from mpiworkbench.plot import wave as plot
from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.solvers.decomposition import decompose
def test_slice_figure_draws_one_line_per_block_boundary():
    layout = decompose((17, 15, 13), 6, dims=(3, 2, 1))
    fig = plot.slice_figure(np.zeros((17, 15)), "z", 6, layout, t=0.5)
    ax = fig.axes[0]
    xs = sorted(line.get_xdata()[0] for line in ax.lines if line.get_xdata()[0] == line.get_xdata()[1])
    ys = sorted(line.get_ydata()[0] for line in ax.lines if line.get_ydata()[0] == line.get_ydata()[1])
    # 17 points over 3 blocks: 6, 6, 5 -> cuts at 6 and 12, drawn half-way between points
    assert np.allclose(xs, [(c - 0.5) / 16 for c in layout.cuts(0)])
    assert np.allclose(ys, [(c - 0.5) / 14 for c in layout.cuts(1)])
    assert "t = 0.5000" in ax.get_title() and "dims 3x2x1" in ax.get_title()
    assert figure_to_png(fig)[:4] == b"\x89PNG"


def test_error_and_timing_figures_show_the_data():
    fig = plot.error_figure([0.0, 0.1, 0.2], [0.0, 1e-3, 2e-3])
    (line,) = fig.axes[0].lines
    assert list(line.get_xdata()) == [0.1, 0.2]  # zero error at t = 0 cannot be drawn on a log axis
    timings = [{"rank": 0, "steps": 5, "compute_s": 1.0, "exchange_s": 0.5},
               {"rank": 1, "steps": 5, "compute_s": 0.8, "exchange_s": 0.7}]
    fig = plot.timings_figure(timings)
    heights = sorted(p.get_height() for p in fig.axes[0].patches)
    assert heights == [0.5, 0.7, 0.8, 1.0]
    fig = plot.convergence_figure([0.125, 0.0625], [4e-2, 1e-2])
    assert len(fig.axes[0].lines) == 2
