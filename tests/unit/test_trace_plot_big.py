"""A trace of a million calls opens and draws: the timeline downsamples a crowded window into
pixel columns (a bounded number of artists, not one per call), zooming in below the threshold
draws every call; the communicator dropdown filters; a full buffer is said, with the fix."""

from __future__ import annotations

import numpy as np
import pytest

from mpiworkbench.trace.events import FAMILIES, KIND, TRACE_DTYPE
from mpiworkbench.trace.model import Communicator, Trace
from tests.unit.test_trace_widget import make_trace

pytest.importorskip("ipywidgets")

N = 10**6
STEP = 1e-5  # a call every 10 µs on each rank: 5 s of trace


def _communicators(nranks: int):
    """``trace.comms``: world, and one split off it with the same ranks, named "row"."""
    ranks = tuple(range(nranks))
    return [Communicator(0, "COMM_WORLD", ranks, "world", None), Communicator(1, "row", ranks, "split", 0)]


def big_trace(dropped=(0, 0)) -> Trace:
    """Two ranks of N/2 calls each, built column by column: rank 0 sends to rank 1 and rank 1
    receives on COMM_WORLD, every other call an allreduce on communicator 1 ("row")."""
    events = np.zeros(N, TRACE_DTYPE)
    half = N // 2
    i = np.tile(np.arange(half), 2)
    rank = np.repeat([0, 1], half)
    p2p = i % 2 == 0
    events["rank"] = rank
    events["t0"] = i * STEP + rank * 1e-6
    events["t1"] = events["t0"] + 4e-6
    events["kind"] = np.where(p2p, np.where(rank == 0, KIND["MPI_Send"], KIND["MPI_Recv"]), KIND["MPI_Allreduce"])
    events["comm"] = np.where(p2p, 0, 1)
    events["peer"] = np.where(p2p, 1 - rank, -1)
    events["tag"] = np.where(p2p, 0, -3)
    events["peer2"] = np.where(p2p & (rank == 1), 0, -3)
    events["tag2"] = np.where(p2p & (rank == 1), 0, -3)
    events["bytes"] = 8
    events["count"] = 1
    return Trace(events=events, nranks=2, hosts=["h", "h"], offsets=[0.0, 0.0], estimated_offsets=[0.0, 0.0],
                 dropped=list(dropped), windows=[(0.0, half * STEP)] * 2, unfinished=[], comms=_communicators(2))


def _calls_drawn(ax) -> int:
    return sum(len(c.get_paths()) for c in ax.collections if c.get_gid() == "calls")


@pytest.fixture(scope="module")
def view():
    from mpiworkbench.widgets.trace import TraceView

    return TraceView(big_trace(dropped=(0, 123_456)))


def test_a_million_calls_draw_downsampled_with_few_artists(view):
    ax = view.timeline_figure.axes[0]
    assert view.timeline_image.value[:4] == b"\x89PNG"
    assert len(ax.get_children()) < 200, "not an artist per call"
    assert _calls_drawn(ax) == 0 and [im.get_gid() for im in ax.images] == ["density"]
    assert "zoom in below" in ax.get_title()
    legend = [x.get_text() for x in ax.get_legend().get_texts()]
    assert "250,000 messages: zoom in for arrows" in legend
    assert {"send", "receive", "collective"} <= set(legend)
    assert not [x for x in ax.texts if x.get_gid() == "messages"]


def test_zooming_below_the_threshold_draws_every_call_and_arrows(view):
    from mpiworkbench.plot.trace import MAX_EVENTS

    coarse = len(view.timeline_figure.axes[0].get_children())
    view.zoom.value = (1.0, 1.0 + 2000 * STEP)
    lo, hi = view.zoom.value
    ev = view.trace.events
    inside = int(((ev["t1"] >= lo) & (ev["t0"] <= hi)).sum())
    assert 0 < inside < MAX_EVENTS
    ax = view.timeline_figure.axes[0]
    assert _calls_drawn(ax) == inside, "one bar per call in the window"
    assert len(ax.get_children()) > coarse
    assert not ax.images and "zoom in below" not in ax.get_title()
    assert [a for a in ax.get_children() if a.get_gid() == "messages"], "message arrows drawn"


def test_the_communicator_dropdown_filters_timeline_and_matrix(view):
    labels = [label for label, _ in view.comm.options]
    assert labels == ["All", "COMM_WORLD (2 ranks)", "row (2 ranks)"]
    view.zoom.value = (1.0, 1.0 + 2000 * STEP)
    everything = view.matrix_image.value
    view.comm.value = 1
    ax = view.timeline_figure.axes[0]
    drawn = {c.get_label() for c in ax.collections if c.get_gid() == "calls"}
    assert drawn == {"collective"}, "only the allreduces on 'row'"
    assert "on row" in ax.get_title()
    assert set(view.shown().events["comm"].tolist()) == {1}
    assert view.matrix_image.value != everything, "no messages on 'row': an empty matrix"
    view.comm.value = 0
    drawn = {c.get_label() for c in view.timeline_figure.axes[0].collections if c.get_gid() == "calls"}
    assert drawn == {"send", "receive"}
    view.comm.value = "all"


def test_a_full_buffer_is_said_with_how_to_make_room(view):
    assert view.warning.layout.display != "none"
    text = view.warning.value
    assert "rank 1: 123456" in text and "rank 0" not in text
    assert "wb.trace(capacity=" in text and "mpiworkbench trace --capacity" in text


def test_occupancy_counts_the_time_each_family_fills_in_each_column():
    from mpiworkbench.plot.trace import occupancy

    send, wait = FAMILIES.index("send"), FAMILIES.index("wait")
    # two columns of 0.5 s: a send over [0, 0.5], a wait over [0.25, 0.75] on rank 1
    seconds, starts = occupancy(np.array([0, 1]), np.array([send, wait]), np.array([0.0, 0.25]),
                                np.array([0.5, 0.75]), nranks=2, bins=2, window=1.0)
    assert seconds[0, send].tolist() == pytest.approx([0.5, 0.0])
    assert seconds[1, wait].tolist() == pytest.approx([0.25, 0.25])
    assert seconds.sum() == pytest.approx(1.0) and starts[1, wait].tolist() == [1, 0]


def test_a_small_trace_on_two_communicators_filters_by_id_and_name():
    from mpiworkbench.plot import trace as plot

    t = make_trace([
        dict(rank=0, kind="MPI_Send", t0=0.1, t1=0.2, peer=1, tag=1, bytes=8, comm=0),
        dict(rank=1, kind="MPI_Recv", t0=0.1, t1=0.3, peer=0, tag=1, bytes=8, peer2=0, tag2=1, comm=0),
        dict(rank=0, kind="MPI_Bcast", t0=0.4, t1=0.5, comm=1),
        dict(rank=1, kind="MPI_Bcast", t0=0.4, t1=0.5, comm=1),
    ], comms=_communicators(2))
    for comm in (1, "row"):
        ax = plot.timeline(t, comm=comm).axes[0]
        assert _calls_drawn(ax) == 2 and not [x for x in ax.texts if x.get_gid() == "messages"]
    assert plot.matrix_figure(t, "messages", comm="row").axes[0].images[0].get_array().sum() == 0
    assert plot.matrix_figure(t, "messages", comm=0).axes[0].images[0].get_array().sum() == 1
