"""Pure plotting functions: data in, :class:`matplotlib.figure.Figure` out.

They never touch MPI or a cluster, and use the object-oriented Matplotlib API (no
``pyplot`` state), so widgets can redraw them many times without leaking figures.
"""

from mpiworkbench.plot.render import figure_to_png, new_figure
__all__ = ["figure_to_png", "new_figure"]
