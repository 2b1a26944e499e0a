"""Figures of micro-benchmark results: data in, Matplotlib Figure out (no pyplot state).

Rows are the tidy rows of :mod:`mpiworkbench.bench.results`; several runs (saved and
reloaded) overlay, each run in its own line style. Runs measured on a loaded or
oversubscribed machine are drawn dotted and say so in the legend.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from mpiworkbench.plot.render import new_figure
#: One colour per backend, the same in every figure (C is the black reference line).
BACKEND_COLOURS = {
    "c": "black", "mpi4py-buf": "tab:blue", "mpi4py-obj": "tab:orange", "numba-mpi": "tab:green",
    "api:mpi4py-buf": "tab:cyan", "api:c": "tab:gray", "api:numba-mpi": "tab:olive",
    "api:mpi4py-obj": "tab:brown", "mpi4jax": "tab:purple",
}
RUN_STYLES = ("-", "--", "-.", (0, (5, 1, 1, 1)))
METRICS = {
    "t_us": ("time (µs)", "log"),
    "throughput_MBps": ("throughput (MB/s, 10^6 B)", "log"),
}


def _colour(backend: str, index: int) -> str:
    return BACKEND_COLOURS.get(backend, f"C{index % 10}")


def _human(size: float) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size:g} B"


def runs_of(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["run_id"] for r in rows))


def sweep_figure(rows: list[dict], metric: str = "t_us", title: str | None = None,
                 fits: dict | None = None, labels: dict[str, str] | None = None,
                 width: float = 7.5, height: float = 4.5) -> Figure:
    """Log–log plot of *metric* against message size, one line per (run, backend).

    *fits* (backend → fit dict) adds the thesis model t = latency + size/bandwidth as
    thin lines (ping-pong time only); *labels* names runs (run_id → label) for overlays.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}; got {metric!r}")
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    runs = runs_of(rows)
    for ri, run in enumerate(runs):
        mine = [r for r in rows if r["run_id"] == run and r.get(metric) not in (None, 0)]
        for bi, backend in enumerate(dict.fromkeys(r["backend"] for r in mine)):
            pts = sorted((r for r in mine if r["backend"] == backend), key=lambda r: r["size"])
            flagged = any(r.get("flagged") for r in pts)
            name = backend if len(runs) == 1 else f"{backend} [{(labels or {}).get(run, run)}]"
            x = [max(r["size"], 1) for r in pts]
            ax.plot(x, [r[metric] for r in pts], marker="o", ms=3,
                    ls=":" if flagged else RUN_STYLES[ri % len(RUN_STYLES)],
                    color=_colour(backend, bi), label=name + (" (loaded machine)" if flagged else ""))
            if fits and metric == "t_us" and (fits.get(backend) or {}).get("bandwidth_MBps") and ri == len(runs) - 1:
                f = fits[backend]
                ax.plot(x, [f["latency_us"] + s / f["bandwidth_MBps"] for s in x], lw=0.8,
                        color=_colour(backend, bi), alpha=0.5)
    ax.set_xscale("log", base=2)
    ax.set_yscale(METRICS[metric][1])
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel(METRICS[metric][0])
    ticks = sorted({max(r["size"], 1) for r in rows})
    if ticks:
        step = max(1, len(ticks) // 8)
        ax.set_xticks(ticks[::step], [_human(t) for t in ticks[::step]], rotation=30)
    ax.grid(True, which="major", alpha=0.3)
    if rows:
        ax.legend(fontsize=8, loc="best")
    if title:
        ax.set_title(title)
    return fig


def overhead_figure(overheads: list[dict], title: str | None = None, width: float = 7.5,
                    height: float = 3.5) -> Figure:
    """Relative overhead against C (%) per message size, as paper 001 Figs. 2, 4, 6."""
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    for bi, backend in enumerate(dict.fromkeys(o["backend"] for o in overheads)):
        pts = sorted((o for o in overheads if o["backend"] == backend), key=lambda o: o["size"])
        ax.plot([max(o["size"], 1) for o in pts], [o["overhead_pct"] for o in pts], marker="o", ms=3,
                color=_colour(backend, bi), label=backend)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("symlog", linthresh=10)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("overhead vs C (%)")
    ax.grid(True, alpha=0.3)
    if overheads:
        ax.legend(fontsize=8)
    if title:
        ax.set_title(title)
    return fig


def bcast_rounds_figure(nprocs: int, width: float = 6.0, height: float = 3.0) -> Figure:
    """The binomial-tree cascade of report 003: who sends to whom in each round."""
    fig = new_figure(width, height)
    ax = fig.add_subplot()
    step, rnd = 1, 0
    while step < nprocs:
        for src in range(min(step, nprocs)):
            dst = src + step
            if dst < nprocs:
                ax.annotate("", xy=(rnd + 1, dst), xytext=(rnd, src),
                            arrowprops={"arrowstyle": "->", "color": f"C{rnd}"})
        step, rnd = step * 2, rnd + 1
    for r in range(nprocs):
        ax.plot(range(rnd + 1), [r] * (rnd + 1), color="0.85", lw=0.8, zorder=0)
    ax.set_xticks(range(rnd + 1), [f"after round {k}" if k else "start" for k in range(rnd + 1)])
    ax.set_yticks(range(nprocs), [f"rank {r}" for r in range(nprocs)])
    ax.invert_yaxis()
    ax.set_title(f"binomial cascade, {nprocs} ranks: {rnd} rounds (linear: {nprocs - 1} sends)")
    return fig
