"""Wait states on a trace's timeline: the waiting time shaded over the calls, a colour per
Scalasca pattern, the longest waits linked to their causes, and the same waits in words.

:func:`mpiworkbench.plot.trace.timeline` draws them with ``waits=trace.wait_states()``; the trace
view names the longest waits of its window under the picture (:func:`wait_sentences`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mpiworkbench.trace.events import kind_name
from mpiworkbench.trace.model import Trace
from mpiworkbench.trace.waits import PATTERNS, WaitStates

#: One colour per wait-state pattern (:data:`~mpiworkbench.trace.waits.PATTERNS`), shaded over
#: the calls that waited; darker than the families' colours, so a shaded bar stands out.
WAIT_COLOURS = {
    "Late Sender": "#b2182b", "Late Receiver": "#e66101", "Wait at N×N": "#4a1486",
    "Wait at Barrier": "#252525", "Late Broadcast": "#01665e", "Early Reduce": "#8c510a",
}
#: Up to this many waits (the longest in the window) are linked to their causes by an arrow.
CAUSE_LIMIT = 50


def shade_waits(ax, waits: WaitStates, trace: Trace, lo: float, hi: float, scale: float, max_events: int,
                handles: list) -> None:
    """Shade the waiting intervals of *waits* in ``[lo, hi]`` over the calls of *trace*'s
    timeline in *ax* (x in ``(t - lo) * scale``, a lane per rank): one collection per pattern,
    at most *max_events* bars (the longest); link the :data:`CAUSE_LIMIT` longest to their
    causes with a dotted arrow from the causing rank's lane, at the moment the cause happened
    (the late send began, the last member arrived), to the end of the wait. Legend entries are
    appended to *handles*."""
    w = waits.intervals
    end = w["t_start"] + w["seconds"]
    inside = (end >= lo) & (w["t_start"] <= hi)
    # one communicator shown (Trace.on_comm): the waits on the others are left out
    inside &= np.isin(w["comm"], np.append(np.unique(trace.events["comm"]), -1))
    w, end = w[inside], end[inside]
    if len(w) > max_events:
        longest = np.sort(np.argsort(-w["seconds"], kind="stable")[:max_events])
        w, end = w[longest], end[longest]
    if not len(w):
        return
    left = (np.maximum(w["t_start"], lo) - lo) * scale
    right = (np.minimum(end, hi) - lo) * scale
    width = np.maximum(right - left, (hi - lo) * scale * 2e-4)
    y = w["rank"].astype(float)
    bars = np.stack([np.column_stack([left, y - 0.15]), np.column_stack([left + width, y - 0.15]),
                     np.column_stack([left + width, y + 0.15]), np.column_stack([left, y + 0.15])], axis=1)
    for p in sorted(set(w["pattern"].tolist())):
        sel = w["pattern"] == p
        colour = WAIT_COLOURS[PATTERNS[p]]
        ax.add_collection(PolyCollection(bars[sel], facecolors=colour, edgecolors="none", alpha=0.9, zorder=2.5,
                                         gid="waits", label=PATTERNS[p]))
        handles.append(Patch(facecolor=colour, label=f"{PATTERNS[p]}: {float(w['seconds'][sel].sum()):.3g} s waited"))
    linked = np.argsort(-w["seconds"], kind="stable")[:CAUSE_LIMIT]
    linked = linked[(w["cause_rank"][linked] >= 0) & (w["cause_rank"][linked] != w["rank"][linked])]
    for i in linked.tolist():
        arrow = ax.annotate("", xy=(right[i], y[i]), xytext=(right[i], float(w["cause_rank"][i])),
                            arrowprops={"arrowstyle": "->", "color": WAIT_COLOURS[PATTERNS[int(w["pattern"][i])]],
                                        "lw": 1.0, "linestyle": ":", "shrinkA": 0, "shrinkB": 0})
        arrow.set_gid("wait causes")
    if len(linked):
        handles.append(Line2D([], [], color="black", linestyle=":", label=f"cause → wait ({len(linked)})"))


def wait_sentences(waits: WaitStates, trace: Trace, t0: float | None = None, t1: float | None = None,
                   top: int = 5) -> list[str]:
    """The *top* longest waits of *waits* (of *trace*, the trace they were computed from) that
    overlap ``[t0, t1]``, each in words: "rank 1 waited 0.2 s in MPI_Recv (Late Sender) at
    file.py:20 in main for rank 0's MPI_Send at file.py:12 in main"."""
    w = waits.intervals
    sel = np.ones(len(w), dtype=bool)
    if t0 is not None:
        sel &= w["t_start"] + w["seconds"] >= t0
    if t1 is not None:
        sel &= w["t_start"] <= t1
    out = []
    for r in w[sel][np.argsort(-w["seconds"][sel], kind="stable")[:top]]:
        cause = kind_name(int(trace.events["kind"][r["cause_event"]])) if 0 <= r["cause_event"] < len(trace) else "call"
        where, cause_at = waits.site(int(r["site"])), waits.site(int(r["cause_site"]))
        out.append(f"rank {int(r['rank'])} waited {float(r['seconds']):.3g} s in {kind_name(int(r['kind']))}"
                   f" ({PATTERNS[int(r['pattern'])]})" + (f" at {where}" if where else "")
                   + f" for rank {int(r['cause_rank'])}'s {cause}" + (f" at {cause_at}" if cause_at else ""))
    return out


__all__ = ["WAIT_COLOURS", "CAUSE_LIMIT", "shade_waits", "wait_sentences"]
