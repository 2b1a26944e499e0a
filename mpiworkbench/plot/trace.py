"""Figures of an MPI trace: data in (a :class:`~mpiworkbench.trace.model.Trace`), Matplotlib
Figure out (no pyplot state).

* :func:`timeline` — one lane per rank, each MPI call a bar coloured by family (blocking
  collectives hatched), each point-to-point message an arrow from the send to the matching
  receive, each one-sided operation a dashed arrow from origin to target; ``t0``/``t1`` zoom
  to a step, ``comm`` shows one communicator. A window of more than :data:`MAX_EVENTS` calls
  is drawn downsampled (per rank, the family that fills each pixel column). With ``waits``
  (:meth:`Trace.wait_states`), the waiting time is shaded over the calls in a colour per
  pattern, and the longest waits are linked to their causes.
* :func:`matrix_figure` — messages or bytes, sender rank × receiver rank.
* :func:`time_per_kind_figure` — per rank, the time in each call kind and outside MPI.

Traces too large for a notebook go to Perfetto or ``chrome://tracing`` as Chrome trace-event
JSON: :func:`mpiworkbench.trace.chrome.write_chrome` (also importable from here, as before).

Which family a call belongs to is said once, in :mod:`mpiworkbench.trace.events`; this module
only gives each family a colour.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import to_rgba_array
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mpiworkbench.plot.render import new_figure
from mpiworkbench.trace import events as spec
from mpiworkbench.trace.chrome import write_chrome  # re-exported: in this module's __all__
from mpiworkbench.trace.events import (
    COLLECTIVES, FAMILIES, FAMILY, KIND, KINDS, NONBLOCKING_COLLECTIVES, ONE_SIDED, SENDS, STARTED_COLLECTIVES, STARTED_SENDS, STARTS,
    TESTS,
)
from mpiworkbench.trace.model import Trace
from mpiworkbench.plot.waits import WAIT_COLOURS, shade_waits, wait_sentences  # re-exported: in __all__
from mpiworkbench.trace.waits import WaitStates

#: One colour per family of calls (every family of :data:`~mpiworkbench.trace.events.FAMILIES`),
#: the same in every figure; ``compute`` is the time outside MPI.
FAMILY_COLOURS = {
    "send": "tab:blue", "receive": "tab:green", "sendrecv": "tab:cyan", "probe": "tab:olive",
    "wait": "tab:red", "test": "lightcoral", "barrier": "tab:gray", "collective": "tab:purple",
    "nonblocking collective": "plum", "persistent": "tab:brown", "partitioned": "gold",
    "one-sided": "tab:orange", "one-sided sync": "tab:pink", "communicator": "darkslategray",
    "compute": "whitesmoke",
}

#: A window holding more calls than this is drawn downsampled (:func:`timeline`): every artist
#: costs Matplotlib time to build and draw (measured: docs/measurements.md, section "Tracing"),
#: and a few thousand bars already fill every pixel column of a notebook-wide figure.
MAX_EVENTS = 20_000
#: Pixel columns of a downsampled timeline (a notebook figure is 700–1500 pixels wide).
BINS = 1500
#: Up to this many arrows are drawn one by one (arrow heads); more as one collection of lines.
ARROW_LIMIT = 400
#: More labels than this (folded tests, partitions) that would fit: too crowded, none drawn.
LABEL_LIMIT = 150

#: Families drawn hatched and taller: every member of the communicator is in the call at once.
_HATCHED = frozenset(FAMILY[KINDS[k]] for k in COLLECTIVES)
_FAMILY_INDEX = {f: i for i, f in enumerate(FAMILIES)}
#: kind code → family index, for whole columns of events at once
_FAMILY_OF_KIND = np.array([_FAMILY_INDEX[FAMILY[k]] for k in KINDS], dtype=np.int64)
_LABELLED_PARTITION = frozenset((KIND["MPI_Pready"], KIND["MPI_Parrived"]))


def family(kind: str) -> str:
    """The family of a call *kind* (``"MPI_Iallreduce"`` → ``"nonblocking collective"``), as
    :func:`mpiworkbench.trace.events.family` says."""
    return spec.family(kind)


def kind_colour(kind: str) -> str:
    """The colour of a call *kind* (its family's, :data:`FAMILY_COLOURS`)."""
    return FAMILY_COLOURS[family(kind)]


def _families_of(kinds: np.ndarray) -> np.ndarray:
    """Family indices (into ``FAMILIES``) of an array of kind codes; a code the table does not
    know counts as a collective, as :func:`family` says."""
    kinds = np.asarray(kinds, dtype=np.int64)
    known = (kinds >= 0) & (kinds < len(KINDS))
    return np.where(known, _FAMILY_OF_KIND[np.where(known, kinds, 0)], _FAMILY_INDEX["collective"])


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


# ---------------------------------------------------------------------- communicators
def comm_name(trace: Trace, comm: int | str) -> str:
    """The name of communicator *comm* (an id or a name) of *trace* (:meth:`Trace.comm`)."""
    return trace.comm(comm).name


def select_comm(trace: Trace, comm: int | str | None) -> Trace:
    """*trace* with only the events on communicator *comm* (an index of ``trace.comms`` or a
    name, :meth:`Trace.on_comm`); all of it for ``None``. Ranks stay world ranks."""
    return trace if comm is None else trace.on_comm(comm)


# ---------------------------------------------------------------------- drawing helpers
def _rectangles(left: np.ndarray, width: np.ndarray, y: np.ndarray, height: float) -> np.ndarray:
    """``(n, 4, 2)`` corners of *n* bars, for one PolyCollection."""
    out = np.empty((len(left), 4, 2))
    out[:, (0, 3), 0] = left[:, None]
    out[:, (1, 2), 0] = (left + width)[:, None]
    out[:, (0, 1), 1] = (y - height / 2)[:, None]
    out[:, (2, 3), 1] = (y + height / 2)[:, None]
    return out


def _arrows(ax, x0, y0, x1, y1, *, colour: str, linestyle: str, gid: str) -> None:
    """Arrows from (x0, y0) to (x1, y1): one by one up to :data:`ARROW_LIMIT` of them, else as
    two collections of lines, the heads thicker (thousands of arrow patches would take seconds
    to draw and hide the calls)."""
    if len(x0) <= ARROW_LIMIT:
        for a, b, c, d in zip(x0.tolist(), y0.tolist(), x1.tolist(), y1.tolist()):
            annotation = ax.annotate("", xy=(c, d), xytext=(a, b),
                                     arrowprops={"arrowstyle": "->", "color": colour, "lw": 0.8, "alpha": 0.7,
                                                 "shrinkA": 0, "shrinkB": 0, "linestyle": linestyle})
            annotation.set_gid(gid)
        return
    start, end = np.column_stack([x0, y0]), np.column_stack([x1, y1])
    ax.add_collection(LineCollection(np.stack([start, end], axis=1), colors=colour, linewidths=0.5,
                                     linestyles=linestyle, alpha=0.25, gid=gid))
    # the last fifth drawn thicker: which end is the head, without a marker per arrow piling up
    # into a bar along the receiving lane
    ax.add_collection(LineCollection(np.stack([start + 0.8 * (end - start), end], axis=1), colors=colour,
                                     linewidths=1.2, alpha=0.3, gid=gid))


def _labels(ax, left, width, y, texts, points_per_unit: float) -> None:
    """Small text in the bars wide enough for it; none when more than :data:`LABEL_LIMIT` fit
    (a crowded view: the text would cover the bars)."""
    fits = width * points_per_unit >= np.array([5.0 * len(t) + 4.0 for t in texts]) if len(texts) else np.zeros(0, bool)
    if fits.sum() > LABEL_LIMIT:
        return
    for i in np.flatnonzero(fits):
        ax.text(left[i] + width[i] / 2, y[i], texts[i], ha="center", va="center", fontsize=6, clip_on=True,
                gid="labels")


def _rank_ticks(axis, nranks: int, label: bool = True) -> None:
    """A tick per rank, or every k-th one past 32 ranks (every label would overlap)."""
    ticks = range(0, nranks, max(1, -(-nranks // 32)))
    axis.set_ticks(ticks)
    if label:
        axis.set_ticklabels([f"rank {r}" for r in ticks])


def _legend(ax, handles: list) -> None:
    """The legend right of the axes, in as many columns as it takes to fit the figure's height
    (a trace of every family has more entries than a few ranks' lanes are tall)."""
    if not handles:
        return
    # from the axes' top down, "small" text takes about 14 points a line
    rows = max(4, int(ax.get_position().height * ax.figure.get_figheight() * 72 / 14))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False,
              ncols=-(-len(handles) // rows))


def _covered(a: np.ndarray, b: np.ndarray, bins: int, width: float) -> np.ndarray:
    """Seconds of each of *bins* columns (*width* seconds each, from 0) covered by the
    intervals ``[a, b]``: a call within one column adds its length there; a longer one its
    part in its first and last columns and a whole column to each between (a difference array:
    +1 after the first, −1 at the last, summed up). Each call's share is computed on its own,
    so a long trace's sums do not cancel into rounding noise in empty columns."""
    first = np.clip((a / width).astype(np.int64), 0, bins - 1)
    last = np.clip((b / width).astype(np.int64), 0, bins - 1)
    within = first == last
    out = np.zeros(bins)
    out += np.bincount(first[within], weights=(b - a)[within], minlength=bins)
    across = ~within
    f, l = first[across], last[across]
    out += np.bincount(f, weights=(f + 1) * width - a[across], minlength=bins)
    out += np.bincount(l, weights=b[across] - l * width, minlength=bins)
    whole = np.bincount(f + 1, minlength=bins + 1) - np.bincount(l, minlength=bins + 1)
    return out + np.cumsum(whole)[:bins] * width


def _per_group(ranks: np.ndarray, fams: np.ndarray, a: np.ndarray, b: np.ndarray, bins: int, window: float):
    """For each (rank, family) present: the seconds its calls (``a``–``b``, relative to the
    window's start) cover in each of *bins* columns of ``[0, window]``, and how many start in
    each. One pass per group — a few dozen, whatever the number of calls."""
    nfam = len(FAMILIES)
    width = window / bins
    group = ranks.astype(np.int64) * nfam + fams
    start_bin = np.clip((a / width).astype(np.int64), 0, bins - 1)
    order = np.argsort(group, kind="stable")
    present, first = np.unique(group[order], return_index=True)
    bounds = np.append(first, len(order))
    for g, lo, hi in zip(present.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order[lo:hi]
        yield g // nfam, g % nfam, _covered(a[rows], b[rows], bins, width), np.bincount(start_bin[rows], minlength=bins)


def occupancy(ranks: np.ndarray, fams: np.ndarray, a: np.ndarray, b: np.ndarray, nranks: int,
              bins: int, window: float) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, family and bin of ``[0, window]``: the seconds covered by calls (``a``–``b``,
    relative to the window's start) and how many calls start in the bin.

    Returns
    -------
    seconds, starts : numpy.ndarray
        Both ``(nranks, len(FAMILIES), bins)``.
    """
    seconds = np.zeros((nranks, len(FAMILIES), bins))
    starts = np.zeros((nranks, len(FAMILIES), bins), dtype=np.int64)
    for rank, fam, covered, started in _per_group(ranks, fams, a, b, bins, window):
        seconds[rank, fam], starts[rank, fam] = covered, started
    return seconds, starts


def _density(ax, w: np.ndarray, fams: np.ndarray, lo: float, hi: float, scale: float, nranks: int,
             bins: int) -> None:
    """The calls of window *w* as one image: per rank and pixel column, the colour of the family
    that fills most of it, more opaque the busier the column."""
    a = np.clip(w["t0"], lo, hi) - lo
    b = np.clip(w["t1"], lo, hi) - lo
    width = (hi - lo) / bins
    # the winner so far per rank and column, not a rank × family × column array (thousands of
    # ranks would make that gigabytes)
    best_score = np.zeros((nranks, bins))
    best = np.zeros((nranks, bins), dtype=np.int64)
    busy = np.zeros((nranks, bins))
    anything = np.zeros((nranks, bins), dtype=bool)
    for rank, fam, covered, started in _per_group(w["rank"], fams, a, b, bins, hi - lo):
        # a call too short to cover any time still marks its column (the tiny weight of a start)
        score = covered + started * width * 1e-6
        wins = score > best_score[rank]
        best[rank, wins], best_score[rank, wins] = fam, score[wins]
        busy[rank] += covered / width
        anything[rank] |= started > 0
    anything |= busy > 0
    colours = to_rgba_array([FAMILY_COLOURS[f] for f in FAMILIES]).astype(np.float32)
    lanes = colours[best]
    lanes[..., 3] = np.where(anything, 0.35 + 0.65 * np.clip(busy, 0.0, 1.0), 0.0)
    # image rows per lane: with few ranks the bar fills the middle 6 of 10 (a lane's 0.6, gaps
    # between ranks); with many, a lane is a pixel or two anyway
    rows, fill = (10, slice(2, 8)) if nranks <= 64 else (1, slice(0, 1))
    image = np.zeros((nranks, rows, bins, 4), dtype=np.float32)
    image[:, fill] = lanes[:, None]
    # antialiased: the columns outnumber the pixels of a narrow figure; blended, not skipped
    ax.imshow(image.reshape(nranks * rows, bins, 4), extent=(0, (hi - lo) * scale, nranks - 0.5, -0.5),
              origin="upper", aspect="auto", interpolation="antialiased", gid="density")


# ---------------------------------------------------------------------- figures
def timeline(trace: Trace, t0: float | None = None, t1: float | None = None, *, arrows: bool = True,
             title: str | None = None, width: float = 9.0, height: float | None = None, ax=None,
             comm: int | str | None = None, max_events: int = MAX_EVENTS, bins: int = BINS,
             waits: WaitStates | None = None) -> Figure:
    """Per-rank timeline of *trace* between *t0* and *t1* (seconds; by default the :func:`span`
    of its calls).

    Each call is a bar from entry to return in its rank's lane, coloured by family; blocking
    collectives are hatched spans across the lane; a non-blocking collective (or a started
    persistent collective) has a thin span on to its completion (``t_done``); folded tests say
    how many calls they are (×n) and partitioned Pready/Parrived their partition, where the bar
    is wide enough. Messages are arrows from the send's start on the sender's lane to the
    completion of the matching receive on the receiver's lane; one-sided operations dashed
    arrows from origin to target, ending where the operation completed.

    A window of more than *max_events* calls is drawn downsampled: per rank, *bins* columns,
    each in the colour of the family that fills most of it (no arrows: their number is said in
    the legend); zoom in for every call.

    With *waits* (the trace's :meth:`~mpiworkbench.trace.model.Trace.wait_states`), each waiting
    interval is shaded over its call in its pattern's colour, and the longest are linked to
    their causes (:func:`mpiworkbench.plot.waits.shade_waits`).

    Parameters
    ----------
    trace : Trace
    t0, t1 : float, optional
        The window (seconds on the trace's axis).
    arrows : bool
        Draw messages and one-sided operations.
    title : str, optional
    width, height : float, optional
        Figure size in inches (ignored with *ax*).
    ax : matplotlib.axes.Axes, optional
        Draw into this axes.
    comm : int or str, optional
        Only the events on this communicator (an index of ``trace.comms`` or its name); lanes
        stay world ranks.
    max_events : int
        Most calls drawn one by one.
    bins : int
        Columns of a downsampled window.
    waits : WaitStates, optional
        The waiting intervals to shade (of the whole trace, whichever communicator is shown:
        those on other communicators are left out).
    """
    trace = select_comm(trace, comm)
    first, last = span(trace)
    lo = first if t0 is None else float(t0)
    hi = last if t1 is None else float(t1)
    if hi <= lo:
        raise ValueError(f"t1 must be after t0; got t0={lo}, t1={hi}")
    scale, unit = _seconds_axis(hi - lo)
    if ax is None:
        # a lane per rank, up to a figure a notebook can show: past that, lanes get thinner
        fig = new_figure(width, height or min(1.0 + 0.7 * max(trace.nranks, 1), 12.0))
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    nranks = trace.nranks
    ev = trace.events
    keep = (ev["t1"] >= lo) & (ev["t0"] <= hi)
    w = ev[keep]
    fams = _families_of(w["kind"])
    present = set(np.unique(fams).tolist())
    extra_handles = []
    downsampled = len(w) > max_events
    if downsampled:
        _density(ax, w, fams, lo, hi, scale, nranks, bins)
        if arrows:
            # the sends Trace.messages would match, counted rather than matched (a pass
            # over every call for arrows that are not drawn)
            sending = np.isin(w["kind"], list(SENDS)) | (np.isin(w["kind"], list(STARTS))
                                                         & np.isin(w["op"], list(STARTED_SENDS)))
            sends = int((sending & (w["peer"] >= 0)).sum())
            one_sided = int((np.isin(w["kind"], list(ONE_SIDED)) & (w["peer"] >= 0)).sum())
            if sends or one_sided:
                what = " and ".join(s for s in (f"{sends:,} messages" if sends else "",
                                                f"{one_sided:,} one-sided" if one_sided else "") if s)
                extra_handles.append(Patch(facecolor="white", edgecolor="none", label=f"{what}: zoom in for arrows"))
    else:
        left = (np.maximum(w["t0"], lo) - lo) * scale
        right = (np.minimum(w["t1"], hi) - lo) * scale
        widths = np.maximum(right - left, (hi - lo) * scale * 2e-4)
        y = w["rank"].astype(float)
        # one collection per family: a few artists whatever the number of calls
        points_per_unit = ax.get_position().width * fig.get_figwidth() * 72 / ((hi - lo) * scale)
        for f in sorted(present):
            sel = fams == f
            # outline and hatch only on bars a few points wide: on thinner ones the edges are
            # all that would show, a black smear
            hatched = FAMILIES[f] in _HATCHED and np.median(widths[sel]) * points_per_unit >= 3
            ax.add_collection(PolyCollection(
                _rectangles(left[sel], widths[sel], y[sel], 0.8 if FAMILIES[f] in _HATCHED else 0.5),
                facecolors=FAMILY_COLOURS[FAMILIES[f]], edgecolors="black" if hatched else "none",
                linewidths=0.4, hatch="//" if hatched else None, alpha=0.85, gid="calls", label=FAMILIES[f]))
        _completion_spans(ax, ev, lo, hi, scale, extra_handles)
        folded = np.isin(w["kind"], list(TESTS)) & (w["count"] > 1)
        parts = np.isin(w["kind"], list(_LABELLED_PARTITION))
        labelled = folded | parts
        texts = [f"×{c}" if is_folded else f"p{p}"
                 for c, p, is_folded in zip(w["count"][labelled].tolist(), w["aux"][labelled].tolist(),
                                            folded[labelled].tolist())]
        _labels(ax, left[labelled], widths[labelled], y[labelled], texts, points_per_unit)
        if arrows:
            _message_arrows(ax, trace, lo, hi, scale, extra_handles)
            _rma_arrows(ax, trace, lo, hi, scale, extra_handles)
    if waits is not None:
        shade_waits(ax, waits, trace, lo, hi, scale, max_events, extra_handles)
    unfinished = np.asarray(trace.unfinished, dtype=np.int64)
    for index in unfinished[keep[unfinished]].tolist():  # read from a hung world: the call it is blocked in
        e = ev[index]
        kind = spec.kind_name(int(e["kind"]))
        left = (max(float(e["t0"]), lo) - lo) * scale
        right = (min(float(e["t1"]), hi) - lo) * scale
        ax.barh(int(e["rank"]), right - left, left=left, height=0.9, fill=False, edgecolor="red",
                linestyle="--", linewidth=1.2)
        ax.annotate(f"still in {kind}", (right, int(e["rank"])), xytext=(-4, 0), textcoords="offset points",
                    ha="right", va="center", color="red", fontsize="small")
    ax.set_ylim(nranks - 0.4, -0.6)
    _rank_ticks(ax.yaxis, nranks)
    ax.set_xlim(0, (hi - lo) * scale)
    ax.set_xlabel(f"time ({unit})" + (f" after {lo * scale:.4g} {unit}" if lo else ""))
    handles = [Patch(facecolor=FAMILY_COLOURS[f], label=f, hatch="//" if f in _HATCHED else None,
                     edgecolor="black" if f in _HATCHED else "none")
               for i, f in enumerate(FAMILIES) if i in present]
    _legend(ax, handles + extra_handles)
    if title is None:
        title = f"MPI calls of {nranks} rank(s)" + (f" on {comm_name(trace, comm)}" if comm is not None else "")
    if downsampled:  # said under any title: the picture is not every call
        title += f"\n{len(w):,} calls, downsampled: zoom in below {max_events:,} for each"
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _completion_spans(ax, ev: np.ndarray, lo: float, hi: float, scale: float, handles: list) -> None:
    """Thin spans from the start of a non-blocking (or started persistent) collective to its
    completion: the call itself returns at once, the operation runs on until a Wait or Test."""
    running = np.isin(ev["kind"], list(NONBLOCKING_COLLECTIVES))
    running |= np.isin(ev["kind"], list(STARTS)) & np.isin(ev["op"], list(STARTED_COLLECTIVES))
    running &= (ev["t_done"] > ev["t0"]) & (ev["t_done"] >= lo) & (ev["t0"] <= hi)
    if not running.any():
        return
    s = ev[running]
    left = (np.maximum(s["t0"], lo) - lo) * scale
    right = (np.minimum(s["t_done"], hi) - lo) * scale
    fams = _families_of(s["kind"])
    colours = [FAMILY_COLOURS[FAMILIES[f]] for f in fams.tolist()]
    ax.add_collection(PolyCollection(_rectangles(left, right - left, s["rank"].astype(float), 0.14),
                                     facecolors=colours, edgecolors="none", alpha=0.9, zorder=0.9, gid="spans"))
    handles.append(Line2D([], [], color=FAMILY_COLOURS["nonblocking collective"], linewidth=3,
                          label=f"running until completed ({int(running.sum())})"))


def _message_arrows(ax, trace: Trace, lo: float, hi: float, scale: float, handles: list) -> None:
    messages = trace.messages()  # matched once per trace (Trace caches them)
    inside = (messages["t_recv"] >= lo) & (messages["t_send"] <= hi)
    m = messages[inside]
    if not len(m):
        return
    _arrows(ax, (m["t_send"] - lo) * scale, m["src"].astype(float), (m["t_recv"] - lo) * scale,
            m["dst"].astype(float), colour="black", linestyle="-", gid="messages")
    handles.append(Patch(facecolor="white", edgecolor="black", label=f"→ message ({len(m)})"))


def _rma_arrows(ax, trace: Trace, lo: float, hi: float, scale: float, handles: list) -> None:
    ops = trace.rma()
    if not len(ops):
        return
    # completion unknown (no fence/unlock/flush seen): a short arrow, direction only
    end = np.where(ops["t_complete"] > 0, ops["t_complete"], ops["t_issue"] + (hi - lo) * 0.01)
    inside = (end >= lo) & (ops["t_issue"] <= hi) & (ops["target"] >= 0)
    if not inside.any():
        return
    o = ops[inside]
    _arrows(ax, (o["t_issue"] - lo) * scale, o["origin"].astype(float), (end[inside] - lo) * scale,
            o["target"].astype(float), colour=FAMILY_COLOURS["one-sided"], linestyle="--", gid="rma")
    handles.append(Line2D([], [], color=FAMILY_COLOURS["one-sided"], linestyle="--",
                          label=f"one-sided op, origin → target ({len(o)})"))


def matrix_figure(trace: Trace, what: str = "bytes", title: str | None = None, width: float = 4.2,
                  height: float = 3.6, comm: int | str | None = None) -> Figure:
    """The communication matrix: *what* (``"bytes"`` or ``"messages"``) sent from row to column,
    of all communicators or of *comm* only (an index of ``trace.comms`` or its name)."""
    data = select_comm(trace, comm).matrix(what)
    fig = new_figure(width, height)
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(data, cmap="Blues", vmin=0)
    if trace.nranks <= 16:  # beyond, the numbers would not fit their cells
        top = data.max()
        for (i, j), value in np.ndenumerate(data):
            ax.text(j, i, f"{value:,}", ha="center", va="center", fontsize="small",
                    color="white" if top and value > 0.6 * top else "black")
    _rank_ticks(ax.xaxis, trace.nranks, label=False)
    _rank_ticks(ax.yaxis, trace.nranks, label=False)
    ax.set_xlabel("to rank")
    ax.set_ylabel("from rank")
    fig.colorbar(image, ax=ax, label=what)
    ax.set_title(title or f"{what} sent, rank × rank" + (f" on {comm_name(trace, comm)}" if comm is not None else ""))
    return fig


def time_per_kind_figure(trace: Trace, title: str | None = None, width: float = 7.0,
                         height: float | None = None) -> Figure:
    """Per rank, a stacked bar of the seconds in each call kind and outside MPI (``compute``).
    Waiting shows as time inside the blocking call (a receive, a wait, a collective)."""
    spent = trace.time_per_kind()
    ranks = sorted(spent)
    kinds = [k for k in KINDS if any(k in s for s in spent.values())] + ["compute"]
    # ranks × kinds, so each kind is one barh call over all ranks
    seconds = np.array([[spent[r].get(k, 0.0) for k in kinds] for r in ranks]).reshape(len(ranks), len(kinds))
    total = float(seconds.sum(axis=1).max()) if len(ranks) else 0.0
    scale, unit = _seconds_axis(total or 1e-6)
    seconds *= scale
    lefts = np.cumsum(seconds, axis=1) - seconds
    fig = new_figure(width, height or min(1.2 + 0.5 * max(trace.nranks, 1), 12.0))
    ax = fig.add_subplot(1, 1, 1)
    for j, kind in enumerate(kinds):
        if not seconds[:, j].any():
            continue
        colour = FAMILY_COLOURS["compute"] if kind == "compute" else kind_colour(kind)
        ax.barh(ranks, seconds[:, j], left=lefts[:, j], color=colour, edgecolor="black", linewidth=0.3, label=kind)
    _rank_ticks(ax.yaxis, trace.nranks)
    ax.invert_yaxis()
    ax.set_xlabel(f"time ({unit})")
    _legend(ax, ax.get_legend_handles_labels()[0])
    ax.set_title(title or "time per call kind (compute = outside MPI)")
    return fig


__all__ = ["FAMILY_COLOURS", "WAIT_COLOURS", "MAX_EVENTS", "span", "timeline", "matrix_figure", "time_per_kind_figure",
           "write_chrome", "family", "kind_colour", "select_comm", "comm_name", "occupancy", "wait_sentences"]
