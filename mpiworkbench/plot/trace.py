"""Figures of an MPI trace: data in (a :class:`~mpiworkbench.trace.model.Trace`), Matplotlib
Figure out (no pyplot state).

* :func:`timeline` — one lane per rank, each MPI call a bar coloured by kind (collectives as
  hatched spans), each point-to-point message an arrow from the send to the matching receive;
  ``t0``/``t1`` zoom to a step.
* :func:`matrix_figure` — messages or bytes, sender rank × receiver rank.
* :func:`time_per_kind_figure` — per rank, the time in each call kind and outside MPI.
* :func:`write_chrome` — the Chrome trace-event JSON (Perfetto, ``chrome://tracing``) for traces
  too large for a notebook.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from mpiworkbench.plot.render import new_figure
from mpiworkbench.trace.events import COLLECTIVES, KINDS
from mpiworkbench.trace.model import Trace

#: One colour per family of calls, the same in every figure.
FAMILY_COLOURS = {
    "send": "tab:blue", "receive": "tab:green", "wait": "tab:red", "probe": "tab:olive",
    "sendrecv": "tab:cyan", "barrier": "tab:gray", "collective": "tab:purple", "compute": "whitesmoke",
}
_FAMILY = {
    "MPI_Send": "send", "MPI_Ssend": "send", "MPI_Isend": "send", "MPI_Issend": "send",
    "MPI_Recv": "receive", "MPI_Irecv": "receive", "MPI_Mrecv": "receive",
    "MPI_Probe": "probe", "MPI_Mprobe": "probe",
    "MPI_Wait": "wait", "MPI_Waitall": "wait", "MPI_Waitany": "wait",
    "MPI_Sendrecv": "sendrecv", "MPI_Sendrecv_replace": "sendrecv", "MPI_Barrier": "barrier",
}


def family(kind: str) -> str:
    """``send``, ``receive``, ``wait``, ``probe``, ``sendrecv``, ``barrier`` or ``collective``."""
    return _FAMILY.get(kind, "collective")


def kind_colour(kind: str) -> str:
    return FAMILY_COLOURS[family(kind)]


def _seconds_axis(duration: float) -> tuple[float, str]:
    if duration < 1e-3:
        return 1e6, "µs"
    if duration < 1.0:
        return 1e3, "ms"
    return 1.0, "s"


def span(trace: Trace, margin: float = 0.03) -> tuple[float, float]:
    """From a little before the first call to a little after the last one (seconds): the
    default view of a timeline (the traced region around the calls is mostly not MPI)."""
    if not len(trace):
        return 0.0, max(trace.duration, 1e-6)
    first, last = float(trace.events["t0"].min()), float(trace.events["t1"].max())
    pad = max(last - first, 1e-6) * margin
    return max(0.0, first - pad), last + pad


def timeline(trace: Trace, t0: float | None = None, t1: float | None = None, *, arrows: bool = True,
             title: str | None = None, width: float = 9.0, height: float | None = None, ax=None) -> Figure:
    """Per-rank timeline of *trace* between *t0* and *t1* (seconds; by default the :func:`span`
    of its calls).

    Each call is a bar from entry to return in its rank's lane, coloured by family; collectives
    are hatched spans across the lane; messages are arrows from the send's start on the
    sender's lane to the completion of the matching receive on the receiver's lane.
    """
    first, last = span(trace)
    lo = first if t0 is None else float(t0)
    hi = last if t1 is None else float(t1)
    if hi <= lo:
        raise ValueError(f"t1 must be after t0; got t0={lo}, t1={hi}")
    scale, unit = _seconds_axis(hi - lo)
    if ax is None:
        fig = new_figure(width, height or 1.0 + 0.7 * max(trace.nranks, 1))
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    ev = trace.events
    keep = (ev["t1"] >= lo) & (ev["t0"] <= hi)
    families = set()
    unfinished = set(trace.unfinished)
    for index in np.flatnonzero(keep):
        e = ev[index]
        kind = KINDS[int(e["kind"])]
        fam = family(kind)
        families.add(fam)
        collective = int(e["kind"]) in COLLECTIVES
        left = (max(float(e["t0"]), lo) - lo) * scale
        right = (min(float(e["t1"]), hi) - lo) * scale
        ax.barh(int(e["rank"]), max(right - left, (hi - lo) * scale * 2e-4), left=left,
                height=0.8 if collective else 0.5, color=kind_colour(kind),
                edgecolor="black" if collective else "none", linewidth=0.4,
                hatch="//" if collective else None, alpha=0.85)
        if index in unfinished:  # read from a hung world: the call it is still blocked in
            ax.barh(int(e["rank"]), right - left, left=left, height=0.9, fill=False, edgecolor="red",
                    linestyle="--", linewidth=1.2)
            ax.annotate(f"still in {kind}", (right, int(e["rank"])), xytext=(-4, 0), textcoords="offset points",
                        ha="right", va="center", color="red", fontsize="small")
    n_arrows = 0
    if arrows:
        for m in trace.messages():
            if m["t_recv"] < lo or m["t_send"] > hi:
                continue
            ax.annotate("", xy=((float(m["t_recv"]) - lo) * scale, int(m["dst"])),
                        xytext=((float(m["t_send"]) - lo) * scale, int(m["src"])),
                        arrowprops={"arrowstyle": "->", "color": "black", "lw": 0.8, "alpha": 0.7,
                                    "shrinkA": 0, "shrinkB": 0})
            n_arrows += 1
    ax.set_ylim(trace.nranks - 0.4, -0.6)
    ax.set_yticks(range(trace.nranks))
    ax.set_yticklabels([f"rank {r}" for r in range(trace.nranks)])
    ax.set_xlim(0, (hi - lo) * scale)
    ax.set_xlabel(f"time ({unit})" + (f" after {lo * scale:.4g} {unit}" if lo else ""))
    handles = [Patch(facecolor=FAMILY_COLOURS[f], label=f, hatch="//" if f in ("barrier", "collective") else None,
                     edgecolor="black" if f in ("barrier", "collective") else "none")
               for f in FAMILY_COLOURS if f in families]
    if n_arrows:
        handles.append(Patch(facecolor="white", edgecolor="black", label=f"→ message ({n_arrows})"))
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    ax.set_title(title or f"MPI calls of {trace.nranks} rank(s)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def matrix_figure(trace: Trace, what: str = "bytes", title: str | None = None, width: float = 4.2,
                  height: float = 3.6) -> Figure:
    """The communication matrix: *what* (``"bytes"`` or ``"messages"``) sent from row to column."""
    data = trace.matrix(what)
    fig = new_figure(width, height)
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(data, cmap="Blues", vmin=0)
    for (i, j), value in np.ndenumerate(data):
        ax.text(j, i, f"{value:,}", ha="center", va="center", fontsize="small",
                color="white" if data.max() and value > 0.6 * data.max() else "black")
    ax.set_xticks(range(trace.nranks))
    ax.set_yticks(range(trace.nranks))
    ax.set_xlabel("to rank")
    ax.set_ylabel("from rank")
    fig.colorbar(image, ax=ax, label=what)
    ax.set_title(title or f"{what} sent, rank × rank")
    return fig


def time_per_kind_figure(trace: Trace, title: str | None = None, width: float = 7.0,
                         height: float | None = None) -> Figure:
    """Per rank, a stacked bar of the seconds in each call kind and outside MPI (``compute``).
    Waiting shows as time inside the blocking call (a receive, a wait, a collective)."""
    spent = trace.time_per_kind()
    kinds = [k for k in KINDS if any(k in s for s in spent.values())] + ["compute"]
    total = max((sum(s.values()) for s in spent.values()), default=0.0)
    scale, unit = _seconds_axis(total or 1e-6)
    fig = new_figure(width, height or 1.2 + 0.5 * max(trace.nranks, 1))
    ax = fig.add_subplot(1, 1, 1)
    for rank, s in spent.items():
        left = 0.0
        for kind in kinds:
            value = s.get(kind, 0.0) * scale
            if value:
                colour = FAMILY_COLOURS["compute"] if kind == "compute" else kind_colour(kind)
                ax.barh(rank, value, left=left, color=colour, edgecolor="black", linewidth=0.3,
                        label=kind if rank == min(spent) or kind not in ax.get_legend_handles_labels()[1] else None)
                left += value
    ax.set_yticks(range(trace.nranks))
    ax.set_yticklabels([f"rank {r}" for r in range(trace.nranks)])
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    ax.set_title(title or "time per call kind (compute = outside MPI)")
    return fig


def write_chrome(trace: Trace, path: str | Path) -> Path:
    """Write *trace* as Chrome trace-event JSON (open it in Perfetto or ``chrome://tracing``)."""
    path = Path(path)
    path.write_text(json.dumps(trace.to_chrome()))
    return path


__all__ = ["span", "timeline", "matrix_figure", "time_per_kind_figure", "write_chrome", "family"]
