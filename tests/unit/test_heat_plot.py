"""Heat figures: the live field composites the strips' edges, labels and frame over the field."""

import numpy as np

from mpiworkbench.plot import heat as plot

ROWS = [(0, 11), (11, 22), (22, 32)]


def _field(k: int) -> np.ndarray:
    i, j = np.meshgrid(np.linspace(0, 1, 32), np.linspace(0, 1, 48), indexing="ij")
    return 0.45 + 0.4 * np.sin((2 + k) * np.pi * i) * np.cos((1 + k) * np.pi * j)


def _live_field(mode: str = "new"):
    """*mode* "old": the strips' edges, labels and frame redrawn per frame (as before they were
    composited); "bare": nothing drawn over the field at all."""
    from mpiworkbench.plot.render import LiveFigure, image_layers

    live = plot.LiveField(_field(0), ROWS, title="temperature on 3 rank(s)' strips of rows")
    if mode == "old":
        layers = image_layers(live.ax)
        LiveFigure.__init__(live, live.fig, layers["changing"] + layers["over"], dpi=80)
    elif mode == "bare":
        live.over = []  # still animated: left out of the background too
    return live


def test_field_figure_outlines_and_labels_each_strip():
    fig = plot.field_figure(_field(0), ROWS)
    ax = fig.axes[0]
    assert sorted(line.get_ydata()[0] for line in ax.lines) == [10.5, 21.5]
    assert [t.get_text() for t in ax.texts] == ["rank 0", "rank 1", "rank 2"]
    assert len(plot.field_figure(_field(0), [(0, 32)]).axes[0].texts) == 0  # one rank: no label
    assert [t.get_position()[1] for t in ax.texts] == [5.0, 16.0, 26.5]  # mid-strip


def test_strips_of_a_reduced_picture_are_placed_in_proportion():
    # a 1200-row grid on 2 ranks drawn as a 512-row picture: the edge at grid row 600 is
    # picture row 256, the labels mid-strip, all inside the axes
    ax = plot.field_figure(np.zeros((512, 64)), [(0, 600), (600, 1200)]).axes[0]
    assert [line.get_ydata()[0] for line in ax.lines] == [255.5]
    assert [t.get_position()[1] for t in ax.texts] == [127.5, 383.5]
    bottom, top = ax.get_ylim()
    assert (top, bottom) == (-0.5, 511.5)


def test_live_field_composites_the_strips_and_labels_not_redraws_them(monkeypatch):
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    live = _live_field()
    assert live.changing == [live.ax.images[0]]
    assert sorted(a.get_text() for a in live.over if isinstance(a, Text)) == ["rank 0", "rank 1", "rank 2"]
    assert sum(isinstance(a, Line2D) for a in live.over) == 2
    live.update(_field(0))  # the full draw renders the layer once
    drawn = []
    for kind in (Line2D, Patch, Text):
        monkeypatch.setattr(kind, "draw", lambda self, renderer: drawn.append(self))
    for k in range(1, 4):
        assert live.update(_field(k))[:4] == b"\x89PNG"
    assert live.full_draws == 1 and drawn == []


def test_live_field_composited_frame_looks_as_drawing_everything_over_the_field():
    new, old, bare = _live_field(), _live_field("old"), _live_field("bare")
    for k in range(4):
        for live in (new, old, bare):
            live.update(_field(k))
        new_px, old_px, bare_px = (np.asarray(live.canvas.buffer_rgba()).astype(int) for live in (new, old, bare))
        assert np.abs(new_px - old_px).max() <= 2  # Agg's rounding where the layer is partly covered
        # the labels and strip edges are there: each label's box differs much from the bare field
        height = new_px.shape[0]
        renderer = new.canvas.get_renderer()
        for text in new.ax.texts:
            x0, y0, x1, y1 = (int(round(v)) for v in text.get_window_extent(renderer).extents)
            box = (slice(height - y1, height - y0), slice(x0, x1))
            assert (np.abs(new_px[box] - bare_px[box]).max(axis=2) > 40).sum() > 20, text.get_text()
        assert (np.abs(new_px - bare_px).max(axis=2) > 40).sum() > 200
