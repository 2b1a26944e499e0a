"""Why is it slow, in the product: the Trace's wait states, POP factors and critical path as
methods, the call sites kept by a saved trace and by a window of it, the timeline's shading by
pattern with its cause arrows and sentences, and the hang report's "late, not deadlocked"."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
from matplotlib.colors import to_rgb

from mpiworkbench.plot.trace import WAIT_COLOURS, timeline, wait_sentences
from mpiworkbench.trace import hang, sites
from mpiworkbench.trace.critical import critical_path
from mpiworkbench.trace.efficiency import efficiency
from mpiworkbench.trace.events import EVENT_DTYPE, KIND
from mpiworkbench.trace.model import Trace
from mpiworkbench.trace.sites import CallSites
from mpiworkbench.trace.waits import wait_states


def ev(kind, t0, t1, peer=-1, tag=-3, nbytes=0, peer2=-3, tag2=-3, t_done=0.0, comm=0, req=-1, op=-1, count=1, aux=-1):
    return (t0, t1, t_done, KIND[kind], peer, tag, comm, nbytes, peer2, tag2, req, op, count, aux)


def late_send_then_allreduce() -> Trace:
    """Rank 0 sends 2 s after rank 1 posted its receive (line 12 of a.py), then rank 1 arrives
    1 s late at an Allreduce (line 20); the lines of both ranks recorded."""
    t = Trace.from_ranks([np.array(r, EVENT_DTYPE) for r in (
        [ev("MPI_Send", 3.0, 3.1, peer=1, tag=1), ev("MPI_Allreduce", 4.0, 5.0)],
        [ev("MPI_Recv", 1.0, 3.2, peer=0, tag=1, peer2=0, tag2=1), ev("MPI_Allreduce", 5.0, 5.0)])],
        windows=[(1e-9, 6.0)] * 2)
    t.sites = CallSites(["a.py:12 in main", "a.py:20 in main"],
                        [np.array([0.5, 3.5]), np.array([0.5, 4.5])], [np.array([0, 1]), np.array([0, 1])])
    return t


def test_trace_methods_are_the_analyses_with_the_traces_lines():
    t = late_send_then_allreduce()
    waits = t.wait_states()
    assert waits.records() == wait_states(t, t.sites).records()
    assert waits.seconds("Late Sender", rank=1, cause_rank=0) == pytest.approx(2.0)
    assert waits.seconds("Wait at N×N", rank=0, cause_rank=1) == pytest.approx(1.0)
    [late] = waits.by_call_site(1)
    assert (late["site"], late["cause_site"], late["call"]) == ("a.py:12 in main", "a.py:12 in main", "MPI_Recv")
    assert t.efficiency() == efficiency(t)
    path = t.critical_path()
    assert path.seconds.tolist() == critical_path(t, t.sites).seconds.tolist()
    assert all(row["site"] for row in path.sites)
    # a standard send this large counts as rendezvous: no Late Receiver here (the receive was first)
    assert t.wait_states(eager_bytes=0).seconds("Late Receiver") == 0.0


def test_a_saved_trace_is_analysed_as_the_live_one():
    """The Chrome JSON keeps each rank's traced region: the time before the first call counts
    in the POP factors and the waiting fraction of a saved trace as in the live one."""
    t = late_send_then_allreduce()
    back = Trace.from_chrome(json.loads(json.dumps(t.to_chrome())))
    assert np.ravel(back.windows).tolist() == pytest.approx(np.ravel(t.windows).tolist())
    live, saved = t.efficiency(), back.efficiency()
    for factor in ("runtime", "ideal_runtime", "load_balance", "communication", "transfer", "parallel"):
        assert getattr(saved, factor) == pytest.approx(getattr(live, factor)), factor
    assert back.wait_states().fraction() == pytest.approx(t.wait_states().fraction())


def test_sites_survive_a_window_a_communicator_and_the_chrome_round_trip():
    t = late_send_then_allreduce()
    assert t.window(0.0, 3.5).sites is t.sites and t.on_comm(0).sites is t.sites
    back = Trace.from_chrome(json.loads(json.dumps(t.to_chrome())))
    assert back.sites.table == t.sites.table
    assert [x.tolist() for x in back.sites.times] == [x.tolist() for x in t.sites.times]
    assert back.wait_states().by_call_site() == t.wait_states().by_call_site()
    unrecorded = Trace.from_chrome(Trace(t.events, 2).to_chrome())
    assert unrecorded.sites is None and "call_sites" not in Trace(t.events, 2).to_chrome()["otherData"]


def test_place_puts_each_ranks_lines_on_the_trace_axis_with_one_table():
    parts = [(np.array([10.0, 11.0]), np.array([0, 1]), ["x.py:1 in f", "x.py:2 in f"]),
             None,
             (np.array([20.5]), np.array([0]), ["x.py:2 in f"])]
    placed = sites.place(parts, [10.0, 0.0, 20.0])
    assert placed.table == ["x.py:1 in f", "x.py:2 in f"]
    assert [x.tolist() for x in placed.times] == [[0.0, 1.0], [], [0.5]]
    assert [x.tolist() for x in placed.ids] == [[0, 1], [], [1]]


def test_lines_are_recorded_with_the_time_they_ran_and_the_tracer_restored(monkeypatch):
    monkeypatch.setattr(sites, "_mpi_names", lambda: frozenset({"Sendrecv"}))

    class Comm:
        Sendrecv = staticmethod(abs)

    def body(comm):
        comm.Sendrecv(1)
        return time.monotonic()

    tracer = sys.gettrace()  # pytest's own, or a coverage tool's: put back afterwards
    before = time.monotonic()
    sites.start()
    sites.start()  # starting again starts afresh, and still restores the tracer there was before
    after = body(Comm())
    times, ids, table = sites.stop()
    assert not sites.is_on() and sys.gettrace() is tracer
    in_body = times[[table[i].endswith(" in body") for i in ids]]
    assert len(in_body) and before <= in_body.min() <= in_body.max() <= after


def test_line_recording_is_bounded_and_calls_past_the_bound_have_no_site(monkeypatch):
    """A long trace records at most MAX_LINES lines a rank; the calls after that get no site
    (-1), never the last line recorded, and the tracer there was before is back."""

    class Comm:
        Sendrecv = staticmethod(abs)

    def loop(comm, n):
        for _ in range(n):
            comm.Sendrecv(1)

    monkeypatch.setattr(sites, "MAX_LINES", 50)
    tracer = sys.gettrace()
    sites.start()
    loop(Comm(), 200)  # several lines a round: far past the bound
    after_full = time.monotonic()
    loop(Comm(), 5)
    times, ids, table = sites.stop()
    assert sys.gettrace() is tracer and not sites.is_on()
    assert len(times) == 51 and ids[-1] == -1 and (ids[:-1] >= 0).all()  # the bound, then "unknown from here"
    placed = sites.place([(times, ids, table)], [0.0])
    events = np.zeros(2, dtype=[("rank", "i4"), ("t0", "f8")])
    events["t0"] = [times[10], after_full]
    found = placed.of_events(events)
    assert found[0] >= 0 and placed.table[found[0]].endswith(" in loop") and found[1] == -1


def test_timeline_shades_waits_by_pattern_and_links_them_to_their_causes():
    t = late_send_then_allreduce()
    fig = timeline(t, waits=t.wait_states())
    ax = fig.axes[0]
    shading = [c for c in ax.collections if c.get_gid() == "waits"]
    assert sorted(c.get_label() for c in shading) == ["Late Sender", "Wait at N×N"]
    colours = {c.get_label(): tuple(c.get_facecolor()[0][:3]) for c in shading}
    assert colours["Late Sender"] == pytest.approx(to_rgb(WAIT_COLOURS["Late Sender"]))
    causes = [a for a in ax.texts + ax.collections if a.get_gid() == "wait causes"]
    assert len(causes) == 2
    labels = ax.get_legend_handles_labels()[1] + [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("Late Sender: 2 s waited") for label in labels)
    # without waits: none of it
    assert not [c for c in timeline(t).axes[0].collections if c.get_gid() == "waits"]


def test_wait_sentences_name_the_waiting_call_its_cause_and_lines():
    t = late_send_then_allreduce()
    first, second = wait_sentences(t.wait_states(), t)
    assert first == ("rank 1 waited 2 s in MPI_Recv (Late Sender) at a.py:12 in main "
                     "for rank 0's MPI_Send at a.py:12 in main")
    assert second.startswith("rank 0 waited 1 s in MPI_Allreduce (Wait at N×N)") and "rank 1's MPI_Allreduce" in second
    assert wait_sentences(t.wait_states(), t, 3.5, 6.0) == [second]


def test_trace_view_shades_waits_and_names_the_longest():
    pytest.importorskip("ipywidgets")
    from mpiworkbench.widgets.trace import TraceView

    view = TraceView(late_send_then_allreduce())
    assert [c for c in view.timeline_figure.axes[0].collections if c.get_gid() == "waits"]
    assert "rank 1 waited 2 s in MPI_Recv (Late Sender)" in view.wait_text.value
    view.waits.value = False
    assert not [c for c in view.timeline_figure.axes[0].collections if c.get_gid() == "waits"]
    assert view.wait_text.value == ""


def test_to_otf2_writes_the_wait_states_beside_the_archive(tmp_path):
    pytest.importorskip("otf2", reason="the OTF2 export needs pip install 'mpiworkbench[otf2]'")
    anchor = late_send_then_allreduce().to_otf2(tmp_path / "otf2")
    data = json.loads((anchor.parent / "wait_states.json").read_text())
    assert {r["pattern"] for r in data["intervals"]} == {"Late Sender", "Wait at N×N"}


# ---------------------------------------------------------------------- a late rank in a hang
def _inflight(rank, call, peer=-1, seconds=30.0, outside=0.0, comm=0):
    return hang.InFlight(pid=100 + rank, rank=rank, size=3, calls=5, call=call, peer=peer, tag=-3,
                         bytes=8, seconds=seconds, comm=comm, outside=outside)


def test_a_rank_computing_while_the_others_wait_in_a_collective_is_late_not_deadlocked():
    states = [hang.RankState(0, "running", "", _inflight(0, "MPI_Allreduce", seconds=40.0)),
              hang.RankState(1, "running", "", _inflight(1, None, outside=40.3)),
              hang.RankState(2, "running", "", _inflight(2, "MPI_Allreduce", seconds=39.0))]
    causes = hang.diagnose(states)
    assert causes[0].startswith("rank 1 has been computing for 40 s; ranks 0, 2 wait for it in MPI_Allreduce")
    assert "late, not deadlocked" in causes[0]
    assert not any("never entered" in c or "deadlock:" in c for c in causes)
    assert "not inside an MPI call (computing for 40.3 s)" in hang.report_lines(states)[1]


def test_a_receive_from_a_computing_rank_is_late_and_a_real_deadlock_is_still_named():
    late = [hang.RankState(0, "running", "", _inflight(0, "MPI_Recv", peer=1)),
            hang.RankState(1, "running", "", _inflight(1, None, outside=12.0))]
    assert hang.diagnose(late)[0].startswith("rank 1 has been computing for 12 s; rank 0 waits for it in MPI_Recv")
    deadlock = [hang.RankState(r, "running", "", _inflight(r, "MPI_Recv", peer=1 - r)) for r in (0, 1)]
    causes = hang.diagnose(deadlock)
    assert any("receive–receive deadlock" in c for c in causes) and not any("late" in c for c in causes)
    # waiting in a receive from another rank: the computing one is not what it waits for
    other = [hang.RankState(0, "running", "", _inflight(0, "MPI_Recv", peer=2)),
             hang.RankState(1, "running", "", _inflight(1, None, outside=12.0)),
             hang.RankState(2, "ok", "", None)]
    assert not any("late" in c for c in hang.diagnose(other))


def test_a_report_from_before_the_outside_field_reads_back():
    data = {"pid": 1, "rank": 0, "size": 2, "calls": 3, "call": "MPI_Barrier", "peer": -1, "tag": -3,
            "bytes": 0, "seconds": 1.0, "sent_ages": [], "stack": []}
    record, _ = hang.from_report(data)
    assert record.outside == 0.0 and record.comm == -1
