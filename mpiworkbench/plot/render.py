"""Figures without pyplot state, their PNG bytes for ``ipywidgets.Image``, and live figures
that redraw in place.

A live panel must not build a figure per frame: Matplotlib's layout, tick and text work
dominates a from-scratch render (measured: docs/measurements.md, Live panels: Play at video
rate). :class:`LiveFigure` keeps one figure, draws its static parts once, and per frame
redraws only the artists that change
(blitting on the Agg canvas), then encodes the pixels straight to PNG with a fast setting.
What lies over a changing image but never changes itself (rank blocks, their labels, the axes'
frame) is rendered once into a transparent layer and composited per frame, not redrawn.
"""

from __future__ import annotations

import io
import math
import struct
import zlib
from typing import Iterable

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.image import AxesImage


def new_figure(width: float = 6.4, height: float = 4.0, **kwargs) -> Figure:
    """A Matplotlib figure not registered with pyplot (so redraws never accumulate)."""
    return Figure(figsize=(width, height), layout="constrained", **kwargs)


def figure_to_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render *fig* to PNG bytes, e.g. for ``ipywidgets.Image(value=...)``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def rgba_to_png(rgba: np.ndarray, compress_level: int = 1) -> bytes:
    """PNG bytes of an ``(h, w, 4)`` uint8 array (alpha dropped: the figures are opaque).

    Rows unfiltered, zlib at level 1: a few milliseconds for a panel's picture, where
    Matplotlib's ``savefig`` (adaptive filters, level 6) or Pillow's encoder cost several
    times more for little smaller bytes on a loopback connection.
    """
    h, w = rgba.shape[:2]
    rows = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # filter byte 0 ("none") before every row
    rows[:, 1:] = np.asarray(rgba, dtype=np.uint8)[..., :3].reshape(h, 3 * w)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), compress_level)) + _chunk(b"IEND", b""))


class LiveFigure:
    """A figure redrawn in place: static parts drawn once, *changing* artists blitted per frame.

    Parameters
    ----------
    fig : Figure
        Built once by a plot function of this package.
    changing : iterable of Artist
        The artists a frame updates (an image's data, a line's points, a title's text). They
        are drawn over a copy of the rest; anything else that changes (axis limits, a colour
        scale) needs :meth:`invalidate`, which redraws the whole figure once.
    dpi : int
        Pixels per inch of the PNG.
    over : iterable of Artist
        Artists that do not change but lie over changing ones (an image's rank blocks and
        their labels, its frame): rendered once per full redraw into a transparent layer
        (:class:`Overlay`), composited over the changing artists per frame (a change to
        one needs :meth:`invalidate`). Text costs as much as the image to draw; the layer
        costs a few of its pixels.
    """

    def __init__(self, fig: Figure, changing: Iterable[Artist] = (), dpi: int = 80, over: Iterable[Artist] = ()):
        self.fig = fig
        fig.set_dpi(dpi)
        self.canvas = FigureCanvasAgg(fig)
        self.changing: list[Artist] = []
        self.over: list[Artist] = []
        self._background = None
        self._overlay: Overlay | None = None
        #: Full redraws so far (the first one included); blitted frames are the rest.
        self.full_draws = 0
        for artist in changing:
            self.add_changing(artist)
        for artist in over:
            artist.set_animated(True)  # left out of the background, drawn into the overlay
            self.over.append(artist)

    def add_changing(self, artist: Artist) -> None:
        artist.set_animated(True)  # left out of full draws, drawn by png() on top
        self.changing.append(artist)

    def pixels(self, ax: Axes) -> int:
        """Pixels of *ax*'s longer side as drawn (after the first :meth:`png`, the layout is
        fixed): the resolution a picture shown in it needs, no more."""
        if self._background is None:
            self.canvas.draw()
        return max(1, int(math.ceil(max(ax.bbox.width, ax.bbox.height))))

    def invalidate(self) -> None:
        """Redraw everything at the next :meth:`png` (limits, colour scale or layout changed)."""
        self._background = None

    def png(self) -> bytes:
        """The figure's current picture as PNG bytes, redrawing as little as possible."""
        if self._background is None:
            self.canvas.draw()
            # the layout is fixed from now on: a full redraw is then one pass, not the layout
            # engine's several (what keeps a new colour scale or axis limit cheap)
            self.fig.set_layout_engine("none")
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
            self.full_draws += 1
            if self.over:
                self._overlay = Overlay.render(self.canvas, self.over)
                self.canvas.restore_region(self._background)
        else:
            self.canvas.restore_region(self._background)
        renderer = self.canvas.get_renderer()
        for artist in self.changing:
            if not artist.get_visible():
                continue
            if isinstance(artist, AxesImage):
                self._paste(artist)
            else:
                artist.draw(renderer)
        rgba = np.asarray(self.canvas.buffer_rgba())
        if self._overlay is not None:
            self._overlay.composite(rgba)
        return rgba_to_png(rgba)

    def _paste(self, image: AxesImage) -> None:
        """Draw *image* (filling its axes) straight into the canvas: the data sampled at the
        axes' pixels (nearest point), colour-mapped, written into the buffer — what
        Matplotlib's resampling pipeline does for ``interpolation="nearest"``, at a fraction
        of its cost for a large field."""
        x0, y0, x1, y1 = (int(round(v)) for v in image.axes.bbox.extents)
        height = int(self.canvas.get_width_height()[1])
        data = np.asarray(image.get_array())
        rows_n, cols_n = data.shape[:2]
        cols = ((np.arange(x1 - x0) + 0.5) * cols_n / (x1 - x0)).astype(int)
        rows = ((np.arange(y1 - y0) + 0.5) * rows_n / (y1 - y0)).astype(int)
        if image.origin == "lower":  # the buffer's top row shows the last data row
            rows = rows[::-1]
        rgba = image.cmap(image.norm(data[np.ix_(rows, cols)]), bytes=True)
        np.asarray(self.canvas.buffer_rgba())[height - y1:height - y0, x0:x1] = rgba


class Overlay:
    """Static artists rendered once into a transparent layer; only its covered pixels kept.

    :meth:`composite` blends them over a frame's pixels the way Agg draws over an opaque
    canvas (``dst + (src − dst)·α``, Agg's rounding), so the frame shows what drawing the
    artists over it would (within a level or two of 255 where they overlap each other).
    """

    def __init__(self, index: np.ndarray, rgb: np.ndarray, alpha: np.ndarray):
        self.index = index  # flat pixel indices, row-major over the canvas
        self.rgb = rgb  # (n, 3) int32, the layer's colour at those pixels
        self.alpha = alpha  # (n, 1) int32, its coverage, 1..255

    @classmethod
    def render(cls, canvas: FigureCanvasAgg, artists: Iterable[Artist]) -> "Overlay":
        """Draw the visible *artists* on the cleared canvas (the canvas is left so: restore it)."""
        renderer = canvas.get_renderer()
        renderer.clear()  # transparent: Agg's non-premultiplied blend keeps colour and coverage apart
        for artist in artists:
            if artist.get_visible():
                artist.draw(renderer)
        layer = np.asarray(canvas.buffer_rgba()).reshape(-1, 4)
        index = np.flatnonzero(layer[:, 3])
        covered = layer[index].astype(np.int32)
        return cls(index, covered[:, :3], covered[:, 3:])

    def composite(self, rgba: np.ndarray) -> None:
        """Blend the layer over *rgba* (the canvas's ``(h, w, 4)`` uint8 buffer) in place."""
        flat = rgba.reshape(-1, 4)
        dst = flat[self.index, :3].astype(np.int32)
        # agg::rgba8::lerp: t = (q − p)·a + 128 − (p > q); p + ((t >> 8) + t) >> 8
        t = (self.rgb - dst) * self.alpha + 128 - (dst > self.rgb)
        flat[self.index, :3] = dst + (((t >> 8) + t) >> 8)


def _grown(lo: float, hi: float, vmin: float, vmax: float, log: bool) -> tuple[float, float] | None:
    """New limits covering ``[vmin, vmax]`` with room to grow, or None if ``[lo, hi]`` covers it."""
    if vmin >= lo and vmax <= hi:
        return None
    if log:  # whole decades; when falling, half the span more below (residuals fall for many
        # decades, and a frame of many CG iterations takes several: a fixed margin of two
        # decades made every frame of CG 257² a full redraw, growing with the span makes it rare)
        top = math.ceil(math.log10(max(vmax, hi)))
        low = math.floor(math.log10(min(vmin, lo)))
        if vmin < lo:
            low = max(low - max(2, (top - low) // 2), min(low, -307))  # within a double's range
        return 10.0**low, 10.0**top
    lo = min(vmin, lo)
    return lo, lo + 2 * (vmax - lo) if vmax > hi else hi


def cover(ax: Axes, x: np.ndarray, y: np.ndarray) -> bool:
    """Widen *ax*'s limits (x to twice the data's span, log y by whole decades, half the span
    more when falling) so the data fit; returns whether they changed (the figure then needs a
    full redraw).

    Growing by steps keeps a history curve blitted for many frames between full redraws.
    """
    changed = False
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    y = y[np.isfinite(y) & ((y > 0) if ax.get_yscale() == "log" else np.isfinite(y))]
    if x.size:
        lo, hi = ax.get_xlim()
        new = _grown(lo, hi, float(x.min()), float(x.max()), log=False)
        if new is not None:
            ax.set_xlim(*new)
            changed = True
    if y.size:
        lo, hi = ax.get_ylim()
        new = _grown(lo, hi, float(y.min()), float(y.max()), log=ax.get_yscale() == "log")
        if new is not None:
            ax.set_ylim(*new)
            changed = True
    return changed


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 5 × 10ᵏ at or above *value* (a colour scale that changes rarely)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    k = math.floor(math.log10(value))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0**k >= value * (1 - 1e-12):
            return m * 10.0**k
    return 10.0 ** (k + 1)


def image_layers(*axes: Axes) -> dict[str, list[Artist]]:
    """:class:`LiveFigure`'s *changing* and *over* for image axes: each one's image changes per
    frame, what is drawn over it (:func:`drawn_over`) does not. Titles stay static: text costs
    as much as the image."""
    return {"changing": [ax.images[0] for ax in axes], "over": [a for ax in axes for a in drawn_over(ax)]}


def drawn_over(ax: Axes) -> list[Artist]:
    """What is drawn over an image axes' image, in drawing order: lines, labels, the frame
    (static ones can go to :class:`LiveFigure`'s *over* layer instead of being redrawn)."""
    return [*ax.lines, *ax.texts, *ax.spines.values()]


class LiveCurves(LiveFigure):
    """History curves of one axes extended in place: per frame only their points are set and
    blitted; the axes' limits grow in steps (see :func:`cover`), a full redraw each time."""

    def __init__(self, fig: Figure, lines, dpi: int = 70):
        self.lines = list(lines)
        self.ax = self.lines[0].axes
        super().__init__(fig, self.lines, dpi=dpi)

    def update(self, x, ys) -> bytes:
        """Set the lines' points (*ys* one array per line, nonpositive values hidden on a log
        axis); returns the PNG."""
        log = self.ax.get_yscale() == "log"
        x = np.asarray(x, dtype=float)
        shown = []
        for line, y in zip(self.lines, ys):
            y = np.asarray(y, dtype=float)
            if log:
                y = np.where(y > 0, y, np.nan)
            line.set_data(x, y)
            shown.append(y)
        if cover(self.ax, x, np.concatenate(shown) if shown else x[:0]):
            self.invalidate()
        return self.png()
