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


def _live_slice(mode: str = "new"):
    """A LiveSlice over a 2x2x1 split; *mode* "old": the cuts and the frame redrawn per frame
    (as before they were composited), "bare": nothing drawn over the plane at all."""
    from mpiworkbench.plot.render import LiveFigure, image_layers

    layout = decompose((33, 29, 17), 4, dims=(2, 2, 1))
    live = plot.LiveSlice(_plane(0), "z", 8, layout)
    if mode == "old":
        layers = image_layers(live.ax)
        LiveFigure.__init__(live, live.fig, layers["changing"] + layers["over"], dpi=80)
    elif mode == "bare":
        live.over = []  # still animated: left out of the background too
    return live, layout


def _plane(k: int) -> np.ndarray:
    x, y = np.meshgrid(np.linspace(0, 1, 33), np.linspace(0, 1, 29), indexing="ij")
    return np.sin((3 + k) * np.pi * x) * np.cos((2 + k) * np.pi * y) * (1.5 - 0.2 * k)


def test_live_slice_composites_the_cuts_and_frame_not_redraws_them(monkeypatch):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    live, layout = _live_slice()
    assert live.changing == [live.ax.images[0]]
    assert [a for a in live.over if isinstance(a, Line2D)] == list(live.ax.lines)
    assert len(live.ax.lines) == len(layout.cuts(0)) + len(layout.cuts(1)) == 2
    live.update(_plane(0), 8)  # the full draw renders the layer once
    drawn = []
    monkeypatch.setattr(Line2D, "draw", lambda self, renderer: drawn.append(self))
    monkeypatch.setattr(Patch, "draw", lambda self, renderer: drawn.append(self))  # the spines
    for k in range(1, 4):  # blitted frames: same index, the colour scale is fixed
        assert live.update(_plane(k), 8)[:4] == b"\x89PNG"
    assert live.full_draws == 1 and drawn == []


def test_live_slice_composited_frame_looks_as_drawing_the_cuts_over_the_plane():
    new, layout = _live_slice()
    old, _ = _live_slice("old")
    bare, _ = _live_slice("bare")
    for k, index in ((0, 8), (1, 8), (2, 9), (3, 9)):  # a new index: the title changes, all redrawn
        for live in (new, old, bare):
            live.update(_plane(k), index)
        new_px, old_px, bare_px = (np.asarray(live.canvas.buffer_rgba()).astype(int) for live in (new, old, bare))
        assert np.abs(new_px - old_px).max() <= 2  # Agg's rounding where the layer is partly covered
        assert f"z index {index}," in new.ax.get_title()
        # each dashed cut is there: dark pixels along its column / row, not in the bare plane
        height = new_px.shape[0]
        x0, y0, x1, y1 = new.ax.bbox.extents
        for axis, cut in ((0, layout.cuts(0)[0]), (1, layout.cuts(1)[0])):
            where = (cut - 0.5) / (layout.shape[axis] - 1)
            if axis == 0:
                col = int(x0 + where * (x1 - x0))
                strip = (slice(int(height - y1) + 2, int(height - y0) - 2), slice(col - 1, col + 2))
            else:
                row = int(height - (y0 + where * (y1 - y0)))
                strip = (slice(row - 1, row + 2), slice(int(x0) + 2, int(x1) - 2))
            dark = lambda px: (px[strip][..., :3].max(axis=-1) < 60).any(axis=axis ^ 1).mean()  # noqa: E731
            assert dark(new_px) > 0.3 and dark(bare_px) < 0.05, (axis, dark(new_px), dark(bare_px))
    assert new.full_draws == old.full_draws == 2
