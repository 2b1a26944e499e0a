"""The trace view composes the plot functions: every tab drawn, zoom redraws, export writes JSON;
the timeline draws every family of calls the interposer records, in the colours of one table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpiworkbench.trace.events import FAMILIES, FAMILY, KIND, KINDS, TRACE_DTYPE
from mpiworkbench.trace.model import Trace

pytest.importorskip("ipywidgets")

#: What an event holds when a row does not say (no peer, no tag, no request, one call).
DEFAULTS = {"peer": -1, "tag": -3, "peer2": -3, "tag2": -3, "req": -1, "op": -1, "count": 1, "comm": 0}


def make_trace(rows: list[dict], nranks: int = 2, dropped=None, duration: float = 3.0, comms=None) -> Trace:
    """A Trace from rows of event fields by name (``kind`` by its name), built directly — not
    through ``Trace.from_ranks``, so these tests do not depend on how the model gathers ranks."""
    events = np.zeros(len(rows), TRACE_DTYPE)
    for i, row in enumerate(rows):
        for name, value in {**DEFAULTS, **row}.items():
            events[name][i] = KIND[value] if name == "kind" else value
    return Trace(events=events, nranks=nranks, hosts=["h"] * nranks, offsets=[0.0] * nranks,
                 estimated_offsets=[0.0] * nranks, dropped=list(dropped or [0] * nranks),
                 windows=[(0.0, duration)] * nranks, unfinished=[], comms=list(comms or []))


def small_trace(**kwargs) -> Trace:
    """Two ranks: messages, a barrier, a non-blocking and a started persistent collective, a
    folded test, a Put and a Pready."""
    return make_trace([
        dict(rank=0, kind="MPI_Send", t0=0.5, t1=0.6, peer=1, tag=7, bytes=800),
        dict(rank=0, kind="MPI_Isend", t0=0.9, t1=0.91, peer=1, tag=8, bytes=40, t_done=1.1),
        dict(rank=0, kind="MPI_Wait", t0=1.0, t1=1.1),
        dict(rank=0, kind="MPI_Iallreduce", t0=1.2, t1=1.22, t_done=1.6, bytes=8),
        dict(rank=0, kind="MPI_Test", t0=1.25, t1=1.55, count=12, aux=1),
        dict(rank=0, kind="MPI_Put", t0=1.7, t1=1.72, peer=1, bytes=64, t_done=1.9, req=0),
        dict(rank=0, kind="MPI_Win_fence", t0=1.85, t1=1.9, req=0),
        dict(rank=0, kind="MPI_Pready", t0=2.0, t1=2.2, aux=3),
        dict(rank=0, kind="MPI_Barrier", t0=2.3, t1=2.5),
        dict(rank=1, kind="MPI_Recv", t0=0.4, t1=0.65, peer=0, tag=7, bytes=800, peer2=0, tag2=7),
        dict(rank=1, kind="MPI_Recv", t0=0.7, t1=1.05, peer=-2, tag=-1, bytes=40, peer2=0, tag2=8),
        dict(rank=1, kind="MPI_Start", t0=1.2, t1=1.21, op=KIND["MPI_Allreduce_init"], t_done=1.6, req=2),
        dict(rank=1, kind="MPI_Win_fence", t0=1.7, t1=1.9, req=0),
        dict(rank=1, kind="MPI_Barrier", t0=2.4, t1=2.5),
    ], **kwargs)


def test_trace_view_draws_zooms_and_exports(tmp_path):
    from mpiworkbench.widgets.trace import TraceView

    view = TraceView(small_trace())
    assert view.timeline_image.value[:4] == b"\x89PNG" and view.matrix_image.value and view.kinds_image.value
    before = view.timeline_image.value
    view.zoom.value = (0.0, 0.7)
    assert view.timeline_image.value != before
    view.matrix_what.value = "messages"
    view.file.value = str(tmp_path / "t.json")
    view.export()
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert view.warning.layout.display == "none", "nothing dropped: no warning"
    with pytest.raises(ValueError, match="no trace to show"):
        TraceView(None)


def test_every_family_has_one_colour_and_the_families_are_the_events_tables():
    from mpiworkbench.plot import trace as plot

    assert set(FAMILIES) <= set(plot.FAMILY_COLOURS)
    colours = [plot.FAMILY_COLOURS[f] for f in (*FAMILIES, "compute")]
    assert len(set(colours)) == len(colours), "two families would look alike"
    assert all(plot.family(k) == FAMILY[k] for k in KINDS)
    assert plot.kind_colour("MPI_Iallreduce") == plot.FAMILY_COLOURS["nonblocking collective"]
    assert not hasattr(plot, "_FAMILY"), "the families are said once, in trace/events.py"


def test_timeline_draws_spans_folded_tests_partitions_and_one_sided_arrows():
    from mpiworkbench.plot import trace as plot

    t = small_trace()
    ax = plot.timeline(t, width=14).axes[0]
    calls = [c for c in ax.collections if c.get_gid() == "calls"]
    assert sum(len(c.get_paths()) for c in calls) == len(t), "one bar per call"
    assert len(calls) == len(set(plot.family(KINDS[k]) for k in t.events["kind"])), "one collection per family"
    [spans] = [c for c in ax.collections if c.get_gid() == "spans"]
    assert len(spans.get_paths()) == 2, "the Iallreduce and the started Allreduce_init run on to t_done"
    labels = {x.get_text() for x in ax.texts if x.get_gid() == "labels"}
    assert {"×12", "p3"} <= labels
    arrows = [x for x in ax.texts if x.get_gid() == "messages"]
    assert len(arrows) == 2 and all(x.arrow_patch is not None for x in arrows)
    [put] = [x for x in ax.texts if x.get_gid() == "rma"]
    assert put.arrow_patch.get_linestyle() == "--"
    assert put.xy[1] == 1 and put.xyann[1] == 0, "origin rank 0 → target rank 1"
    assert put.xy[0] == pytest.approx(1.9 - plot.span(t)[0]), "ends where the fence completed it (seconds axis)"
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert {"nonblocking collective", "one-sided", "test", "partitioned", "persistent"} <= set(legend)
    bare = plot.timeline(t, arrows=False, width=3).axes[0]
    assert not [x for x in bare.texts if x.get_gid() in ("messages", "rma")]


def test_matrix_and_time_per_kind_figures():
    from mpiworkbench.plot import trace as plot

    t = small_trace()
    m = plot.matrix_figure(t, "messages")
    assert "2" in [x.get_text() for x in m.axes[0].texts]
    k = plot.time_per_kind_figure(t)
    labels = k.axes[0].get_legend_handles_labels()[1]
    assert "compute" in labels and len(labels) == len(set(labels)) == len(t.kinds()) + 1
