"""Runtime, speedup and efficiency against rank count, in the thesis's style (Figs. 2.1-2.2, 6.2-6.5).

Both axes of the runtime and speedup plots are log2; the speedup plot has the ideal
line. Medians are the markers, the bars are the quartiles of the repetitions. Points
that ran more active ranks than the host has cores are drawn hollow, and the region
beyond the core count is shaded and labelled: there the hardware, not the code, sets
the limit. Data in, :class:`~matplotlib.figure.Figure` out; several results (e.g. one
reloaded from JSON) overlay for comparison.
"""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from mpiworkbench.plot.render import new_figure
from mpiworkbench.speedup.analysis import SpeedupResult, busy_note
_MARKERS = "osD^v<>ph*"
_OVERSUB_COLOUR = "#fdb863"


def _log2_axis(axis) -> None:
    axis.set_major_locator(LogLocator(base=2))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _shade_oversubscribed(ax, cores: int | None, xmax: float) -> None:
    if cores is None or xmax <= cores:
        return
    ax.axvspan(cores + 0.5 if cores < 2 else cores * 2**0.25, xmax * 2**0.5, color=_OVERSUB_COLOUR, alpha=0.25, lw=0)
    ax.text(
        cores * 2**0.3,
        0.97,
        f"oversubscribed\n(> {cores} cores)",
        transform=ax.get_xaxis_transform(),
        va="top",
        fontsize=8,
        color="#8c510a",
    )


def _series(results: Sequence[SpeedupResult], size_name: str):
    many = len(results) > 1
    k = 0
    for res in results:
        for (variant, size), pts in res.series().items():
            label = f"{variant}, {size_name}={size}"
            if many and res.label:
                label = f"{res.label}: {label}"
            if res.scaling == "weak":
                label += " (weak)"
            yield label, pts, _MARKERS[k % len(_MARKERS)], f"C{k % 10}"
            k += 1


def _plot_points(ax, pts, y, low, high, marker, colour, label) -> None:
    xs = [int(p["nranks"]) for p in pts]
    ys = [p[y] for p in pts]
    ax.plot(xs, ys, "-", color=colour, lw=1.2, label=label)
    if low is not None:
        err = [[max(p[y] - p[low], 0.0) for p in pts], [max(p[high] - p[y], 0.0) for p in pts]]
        ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor=colour, elinewidth=1, capsize=2)
    for p, xv, yv in zip(pts, xs, ys):
        hollow = bool(p.get("oversubscribed"))
        ax.plot([xv], [yv], marker, color=colour, mfc="white" if hollow else colour, ms=6)


def scaling_figure(
    results: SpeedupResult | Sequence[SpeedupResult],
    size_name: str = "size",
    title: str | None = None,
    width: float = 12.0,
    height: float = 3.8,
) -> Figure:
    """Three panels: wall-clock time, speedup (with ideal line), efficiency."""
    if isinstance(results, SpeedupResult):
        results = [results]
    fig = new_figure(width, height)
    ax_t, ax_s, ax_e = fig.subplots(1, 3)
    counts = sorted({int(p["nranks"]) for r in results for p in r.points}) or [1, 2]
    xmax = max(counts)
    cores = next((r.cores for r in results if r.cores), None)
    for label, pts, marker, colour in _series(results, size_name):
        _plot_points(ax_t, pts, "median", "q1", "q3", marker, colour, label)
        _plot_points(ax_s, pts, "speedup", "speedup_low", "speedup_high", marker, colour, label)
        _plot_points(ax_e, pts, "efficiency", None, None, marker, colour, label)
    ideal = [c for c in counts]
    ax_s.plot(ideal, ideal, "k--", lw=1, label="ideal speedup")
    ax_e.axhline(1.0, color="k", ls="--", lw=1, label="ideal")
    for ax in (ax_t, ax_s, ax_e):
        ax.set_xscale("log", base=2)
        _log2_axis(ax.xaxis)
        ax.set_xlim(min(counts) / 2**0.5, xmax * 2**0.5)
        ax.set_xlabel("number of processes (log2)")
        ax.grid(True, which="major", alpha=0.3)
        _shade_oversubscribed(ax, cores, xmax)
    ax_t.set_yscale("log", base=2)
    _log2_axis(ax_t.yaxis)
    ax_t.set_ylabel("wall-clock time / s (log2)")
    ax_t.set_title("Runtime (median, quartile bars)")
    ax_s.set_yscale("log", base=2)
    _log2_axis(ax_s.yaxis)
    ax_s.set_ylabel("speedup (log2)")
    ax_s.set_title("Speedup")
    ax_e.set_ylim(0, max(1.15, max((p["efficiency"] for r in results for p in r.points), default=1) * 1.1))
    ax_e.set_ylabel("parallel efficiency")
    ax_e.set_title("Efficiency")
    ax_s.legend(fontsize=7, loc="best")
    if any(p.get("oversubscribed") for r in results for p in r.points):
        ax_e.text(
            0.02, 0.02, "hollow markers: oversubscribed points", transform=ax_e.transAxes, fontsize=7, color="#8c510a"
        )
    busy = [busy_note(r) for r in results if busy_note(r)]
    if busy:
        ax_t.text(0.02, 0.02, "busy host: times inflated\n(load > cores)", transform=ax_t.transAxes, fontsize=7,
                  color="#b2182b")
    if title:
        fig.suptitle(title)
    return fig
