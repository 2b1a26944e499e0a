"""Runtime, speedup and efficiency against rank count, in the thesis's style (Figs. 2.1-2.2, 6.2-6.5).

Both axes of the runtime and speedup plots are log2; the speedup plot has the ideal
line. Medians are the markers, the bars are the quartiles of the repetitions. Points
that ran more active ranks than the host has cores are drawn hollow, and the region
beyond the core count is shaded and labelled: there the hardware, not the code, sets
the limit. Data in, :class:`~matplotlib.figure.Figure` out; several results (e.g. one
reloaded from JSON) overlay for comparison.

A traced sweep (points with ``pop``, ``SpeedupSpec(trace=True)``) gets a fourth panel beside
the curves: per rank count a group of bars, the POP factors of that point
(:func:`draw_factors`) — why the efficiency drops. :func:`factors_figure` draws them alone,
one panel per traced series.
"""

from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from mpiworkbench import seeds
from mpiworkbench.plot.render import new_figure
from mpiworkbench.speedup.analysis import SpeedupResult, busy_note, nodes, spans_nodes
from mpiworkbench.speedup.experiments import REFERENCE_BACKEND
from mpiworkbench.speedup.factors import POP_FACTORS, pop_series

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
        if nodes(p) > 1:  # its ranks talked across nodes: framed
            ax.plot([xv], [yv], "s", mfc="none", mec=colour, ms=11, mew=1.0)


def scaling_figure(
    results: SpeedupResult | Sequence[SpeedupResult],
    size_name: str = "size",
    title: str | None = None,
    width: float = 12.0,
    height: float = 3.8,
) -> Figure:
    """Three panels: wall-clock time, speedup (with ideal line), efficiency; a fourth, the POP
    factors of the first traced series (:func:`draw_factors`), when a result was traced (the
    figure then grows by a third of *width*)."""
    if isinstance(results, SpeedupResult):
        results = [results]
    traced = [(r, key, pts) for r in results for key, pts in pop_series(r).items()]
    fig = new_figure(width * (4 / 3 if traced else 1), height)
    ax_t, ax_s, ax_e, *ax_f = fig.subplots(1, 4 if traced else 3)
    if traced:
        result, (variant, size), pts = traced[0]
        draw_factors(ax_f[0], pts, result.cores, f"POP factors: {variant}, {size_name}={size}"
                     + (" (first traced series)" if len(traced) > 1 else ""))
    counts = sorted({int(p["nranks"]) for r in results for p in r.points}) or [1, 2]
    xmax = max(counts)
    cores = next((r.cores for r in results if r.cores), None)
    for label, pts, marker, colour in _series(results, size_name):
        _plot_points(ax_t, pts, "median", "q1", "q3", marker, colour, label)
        _plot_points(ax_s, pts, "speedup", "speedup_low", "speedup_high", marker, colour, label)
        _plot_points(ax_e, pts, "efficiency", None, None, marker, colour, label)
    ideal = [c for c in counts]
    ax_s.plot(ideal, ideal, "k--", lw=1, label="ideal speedup")
    if all(r.experiment == "inner" for r in results):
        _draw_then_speedups(ax_s, xmax)
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
    notes = []
    if any(p.get("oversubscribed") for r in results for p in r.points):
        notes.append("hollow markers: oversubscribed points")
    if any(spans_nodes(r) for r in results):
        notes.append("framed markers: ranks on several nodes")
    if notes:
        ax_e.text(0.02, 0.02, "\n".join(notes), transform=ax_e.transAxes, fontsize=7, color="#8c510a")
    busy = [busy_note(r) for r in results if busy_note(r)]
    if busy:
        ax_t.text(0.02, 0.02, "busy host: times inflated\n(load > cores)", transform=ax_t.transAxes, fontsize=7,
                  color="#b2182b")
    if title:
        fig.suptitle(title)
    return fig


# -- the thesis's module comparison: one curve per backend, C as the reference ---------------

_C_STYLE = {"color": "black", "lw": 2.0}


def _then_series(experiment: str, xmax: int):
    """What the seed documents printed for *experiment*, as ``(kind, data, label)`` or ``None``.

    wave: the thesis's "C 8 to 10 times faster" band (§6.1.4, stated for Figs. 6.2-6.5);
    heat: report 003's Table 1 speedups (1000x1000, MPI on 1 process as the baseline).
    The thesis's CG figures (6.10-6.13) print no values and have no C curve: nothing.
    """
    if experiment == "wave":
        low, high, _ = seeds.wave_ratio_band()
        machine = seeds.load("thesis")["machine"].split(";")[0]
        return "band", (low, high), f"then: thesis §6.1.4, C {low:g}-{high:g}x faster ({machine})"
    if experiment == "heat":
        table = seeds.heat_table("1000x1000")
        pairs = [(n, t) for n, t in zip(table["nranks"], table["time_s"]) if n != "seq"]
        t1 = pairs[0][1]
        shown = [(n, t1 / t) for n, t in pairs if n <= max(8, xmax)]
        return "speedup", shown, "then: report 003 Table 1, 1000x1000 (LISA, 8 cores/node)"
    return None


def _table_2_1(xmax: int) -> dict[str, list[tuple[int, float]]]:
    """Thesis Table 2.1's speedups (C and Python) up to ``max(2, xmax)`` processes."""
    table = seeds.load("thesis")["table_2_1"]
    shown = {}
    for column, name in (("c", "C"), ("python", "Python")):
        pairs = zip(table["nranks"], table[column]["speedup"])
        shown[name] = [(n, 1.0 if s is None else s) for n, s in pairs if n <= max(2, xmax)]
    return shown


def _draw_then_speedups(ax, xmax: int) -> None:
    """Thesis Table 2.1's speedups as dashed "then" series (the inner product, §2.4)."""
    machine = seeds.load("thesis")["machine"].split(";")[0]
    for (name, pts), style in zip(_table_2_1(xmax).items(), ("--", ":")):
        ax.plot([n for n, _ in pts], [v for _, v in pts], style, color="0.4", marker=".", lw=1,
                label=f"then: thesis Table 2.1, {name} ({machine})")


def backend_figure(
    result: SpeedupResult,
    size_name: str = "size",
    title: str | None = None,
    width: float = 13.0,
    height: float = 4.0,
) -> Figure:
    """The thesis's figure pair per backend, and the ratio to C: three panels on log2 axes.

    Wall-clock time (C drawn as the thick black reference line), speedup (ideal line) and
    time / C per point (each point labelled with its ratio; the line at 1 is C). Beside them,
    dashed, what the seed documents printed for this experiment (:func:`_then_series`).
    Points of a backend-crossed result (``variant@backend``) only.
    """
    points = [p for p in result.points if p.get("backend")]
    dotted = False
    if not points:
        raise ValueError("backend_figure needs a result crossed with backends (mpiworkbench speedup … --backend …)")
    fig = new_figure(width, height)
    ax_t, ax_s, ax_r = fig.subplots(1, 3)
    counts = sorted({int(p["nranks"]) for p in points})
    xmax = max(counts)
    cores = result.cores
    k = c_series = 0
    for (variant, size), pts in result.series().items():
        pts = [p for p in pts if p.get("backend")]
        if not pts:
            continue
        backend = pts[0]["backend"]
        label = f"{variant}, {size_name}={size}"
        if backend == REFERENCE_BACKEND:  # C: black, then greys for more C series (other kernels)
            colour, marker = ("black", "0.45", "0.65")[min(c_series, 2)], "sDp"[c_series % 3]
            c_series += 1
        else:
            colour, marker = f"C{k % 10}", _MARKERS[k % len(_MARKERS)]
            k += 1
        _plot_points(ax_t, pts, "median", "q1", "q3", marker, colour, label)
        _plot_points(ax_s, pts, "speedup", "speedup_low", "speedup_high", marker, colour, label)
        rated = [p for p in pts if p.get("ratio_to_c") is not None]
        if rated:
            _plot_points(ax_r, rated, "ratio_to_c", None, None, marker, colour, label)
            for p in rated:
                if p["backend"] != REFERENCE_BACKEND:
                    ax_r.annotate(f"{p['ratio_to_c']:.2f}x", (int(p["nranks"]), p["ratio_to_c"]),
                                  textcoords="offset points", xytext=(4, 3), fontsize=7, color=colour)
        # over the fastest all-C point (e.g. NumPy update vs C update and C messages): dotted
        best = [p for p in pts if p.get("ratio_to_best_c") and p.get("ratio_to_c")
                and abs(p["ratio_to_best_c"] / p["ratio_to_c"] - 1) > 0.01]
        if best:
            ax_r.plot([int(p["nranks"]) for p in best], [p["ratio_to_best_c"] for p in best], ":",
                      color=colour, marker=marker, mfc="white", ms=5, lw=1)
            dotted = True
    for line in ax_t.get_lines() + ax_s.get_lines():
        if line.get_label().split(",")[0].endswith(f"@{REFERENCE_BACKEND}"):
            line.set_linewidth(_C_STYLE["lw"])
    ax_s.plot(counts, counts, "k:", lw=1, label="ideal speedup")
    legend_r = [ax_r.axhline(1.0, color="black", lw=1.5, label="C (reference)")]
    if dotted:
        legend_r.append(ax_r.plot([], [], ":", color="0.3", marker="o", mfc="white",
                                  label="dotted, hollow: over the fastest all-C point")[0])
    then = _then_series(result.experiment, xmax)
    if then is not None:
        kind, data, label = then
        if kind == "band":
            low, high = data
            ax_r.axhspan(low, high, color="0.85", alpha=0.6, lw=0)
            legend_r.append(ax_r.axhline(low, color="0.4", ls="--", lw=1, label=label))
            ax_r.axhline(high, color="0.4", ls="--", lw=1)
        else:
            ax_s.plot([n for n, _ in data], [s for _, s in data], "--", color="0.4", marker=".", lw=1, label=label)
            xmax = max(xmax, max(n for n, _ in data))
    else:
        ax_r.text(0.02, 0.95, "then: the thesis prints no values for these figures", transform=ax_r.transAxes,
                  fontsize=7, color="0.4", va="top")
    lo = min(counts)
    for ax in (ax_t, ax_s, ax_r):
        ax.set_xscale("log", base=2)
        _log2_axis(ax.xaxis)
        ax.set_xlim(lo / 2**0.5, xmax * 2**0.5)
        ax.set_xlabel("number of processes (log2)")
        ax.grid(True, which="major", alpha=0.3)
        _shade_oversubscribed(ax, cores, xmax)
    for ax in (ax_t, ax_s, ax_r):
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_locator(LogLocator(base=2))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax_t.set_ylabel("wall-clock time / s (log2)")
    ax_t.set_title("Runtime per backend (C backend: black, grey)")
    ax_s.set_ylabel("speedup (log2)")
    ax_s.set_title("Speedup")
    ax_r.set_ylabel("time / time on C (log2)")
    ax_r.set_title("Ratio to C, per point")
    ratios = [p[key] for p in points for key in ("ratio_to_c", "ratio_to_best_c") if p.get(key)]
    top = max(ratios + ([then[1][1]] if then and then[0] == "band" else []), default=2.0)
    ax_r.set_ylim(min(ratios + [1.0]) / 1.5, top * 1.5)
    ax_s.legend(fontsize=7, loc="upper left")
    ax_r.legend(handles=legend_r, fontsize=7, loc="center left")
    if busy_note(result):
        ax_t.text(0.02, 0.02, "busy host: times inflated\n(load > cores)", transform=ax_t.transAxes, fontsize=7,
                  color="#b2182b")
    if title:
        fig.suptitle(title)
    return fig


# -- why the efficiency drops: the POP factors of a traced sweep, per rank count --------------

_FACTOR_COLOURS = ("#92c5de", "#4393c3", "#a6dba0", "#5aae61", "#2166ac", "#d6604d", "#67001f")


def draw_factors(ax, points: Sequence[dict], cores: int | None = None, title: str = "POP factors") -> None:
    """On *ax*, per traced point of one series (one rank count each) a group of bars: its POP
    factors (:data:`~mpiworkbench.speedup.factors.POP_FACTORS`, fractions of 1; a factor not
    defined, as scalability under weak scaling, has no bar). Groups of points that ran more
    ranks than the host's *cores* are shaded and labelled oversubscribed, as the curves are."""
    width = 0.8 / len(POP_FACTORS)
    counts = [int(p["nranks"]) for p in points]
    for g, p in enumerate(points):
        if p.get("oversubscribed"):
            ax.axvspan(g - 0.45, g + 0.45, color=_OVERSUB_COLOUR, alpha=0.25, lw=0)
    for k, ((key, label), colour) in enumerate(zip(POP_FACTORS, _FACTOR_COLOURS)):
        xs = [g - 0.4 + (k + 0.5) * width for g, p in enumerate(points) if p["pop"].get(key) is not None]
        ys = [p["pop"][key] for p in points if p["pop"].get(key) is not None]
        ax.bar(xs, ys, width, color=colour, label=label)
    ax.axhline(1.0, color="k", ls="--", lw=1)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([f"{n}\n(oversubscribed)" if p.get("oversubscribed") else str(n)
                        for n, p in zip(counts, points)], fontsize=8)
    ax.set_xlim(-0.6, len(points) - 0.4)
    top = max([p["pop"][k] for p in points for k, _ in POP_FACTORS if p["pop"].get(k) is not None], default=1.0)
    ax.set_ylim(0, max(1.5, top * 1.3))  # room for the legend above the bars
    ax.set_xlabel("number of processes" + (f" ({cores} cores)" if cores else ""))
    ax.set_ylabel("factor (1 = ideal)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=6, ncol=3, loc="upper center")
    ax.grid(True, axis="y", alpha=0.3)


def factors_figure(result: SpeedupResult, size_name: str = "size", title: str | None = None,
                   width: float = 6.0, height: float = 3.8) -> Figure:
    """The POP factors of every traced series of *result* (:func:`draw_factors`), one panel each."""
    series = pop_series(result)
    if not series:
        raise ValueError("factors_figure needs a traced result: run the experiment with trace=True "
                         "(SpeedupSpec(trace=True), `mpiworkbench speedup … --trace`)")
    fig = new_figure(width * len(series), height)
    axes = fig.subplots(1, len(series), squeeze=False)[0]
    for ax, ((variant, size), pts) in zip(axes, series.items()):
        draw_factors(ax, pts, result.cores, f"POP factors: {variant}, {size_name}={size}")
    if title:
        fig.suptitle(title)
    return fig
