"""Figures without pyplot state, and their PNG bytes for ``ipywidgets.Image``."""

from __future__ import annotations

import io

from matplotlib.figure import Figure


def new_figure(width: float = 6.4, height: float = 4.0, **kwargs) -> Figure:
    """A Matplotlib figure not registered with pyplot (so redraws never accumulate)."""
    return Figure(figsize=(width, height), layout="constrained", **kwargs)


def figure_to_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render *fig* to PNG bytes, e.g. for ``ipywidgets.Image(value=...)``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
