"""A trace built from known events: messages matched as MPI matches them, the matrix, time per
kind, zoom, Chrome JSON, the plots — and the hang report's reasoning, on made-up rank states."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from mpiworkbench.client.calls.left import _left_the_call, _not_begun
from mpiworkbench.trace import stacks
from mpiworkbench.trace import hang
from mpiworkbench.trace.events import EVENT_DTYPE, KIND
from mpiworkbench.trace.model import Trace


def ev(kind, t0, t1, peer=-1, tag=-3, nbytes=0, peer2=-3, tag2=-3, t_done=0.0, comm=0, req=-1, op=-1, count=1, aux=-1):
    return (t0, t1, t_done, KIND[kind], peer, tag, comm, nbytes, peer2, tag2, req, op, count, aux)


def _trace(offsets=None) -> Trace:
    rank0 = np.array([
        ev("MPI_Send", 1.0, 1.1, peer=1, tag=7, nbytes=800),
        ev("MPI_Send", 1.2, 1.3, peer=1, tag=7, nbytes=16),
        ev("MPI_Isend", 1.4, 1.41, peer=1, tag=8, nbytes=40, t_done=1.6),
        ev("MPI_Wait", 1.5, 1.6),
        ev("MPI_Barrier", 2.0, 2.5),
    ], EVENT_DTYPE)
    rank1 = np.array([
        ev("MPI_Recv", 0.9, 1.15, peer=0, tag=7, nbytes=800, peer2=0, tag2=7),
        ev("MPI_Recv", 1.16, 1.35, peer=-2, tag=-1, nbytes=16, peer2=0, tag2=7),  # ANY_SOURCE, ANY_TAG
        ev("MPI_Mprobe", 1.36, 1.5, peer=0, tag=8, peer2=0, tag2=8),
        ev("MPI_Mrecv", 1.5, 1.55, nbytes=40, tag2=8),
        ev("MPI_Barrier", 2.4, 2.5),
    ], EVENT_DTYPE)
    return Trace.from_ranks([rank0, rank1], offsets=offsets, hosts=["h", "h"], windows=[(0.5, 3.0), (0.5, 3.0)])


def test_messages_are_matched_in_order_with_their_receive():
    t = _trace()
    m = t.messages()
    assert [(int(x["src"]), int(x["dst"]), int(x["tag"]), int(x["bytes"])) for x in m] == [
        (0, 1, 7, 800), (0, 1, 7, 16), (0, 1, 8, 40)]
    # times are from the start of the traced region (0.5)
    assert m["t_send"][0] == pytest.approx(0.5) and m["t_recv"][0] == pytest.approx(0.65)
    assert m["t_recv"][2] == pytest.approx(1.05)  # the Mrecv after the Mprobe that matched tag 8


def test_matrix_counts_at_the_sender():
    t = _trace()
    assert t.matrix("messages").tolist() == [[0, 3], [0, 0]]
    assert t.matrix("bytes").tolist() == [[0, 856], [0, 0]]
    with pytest.raises(ValueError, match="'bytes' or 'messages'"):
        t.matrix("flops")


def test_time_per_kind_and_compute():
    spent = _trace().time_per_kind()
    assert spent[0]["MPI_Barrier"] == pytest.approx(0.5)
    assert spent[0]["MPI_Send"] == pytest.approx(0.2)
    mpi0 = sum(v for k, v in spent[0].items() if k != "compute")
    assert spent[0]["compute"] == pytest.approx(2.5 - mpi0)


def test_clock_offsets_are_subtracted_per_rank():
    t = _trace(offsets=[0.0, 0.05])
    # rank 1's clock runs 0.05 s ahead: its receive started 0.15 s before rank 0's send
    assert t.of_rank(1)["t0"][0] - t.of_rank(0)["t0"][0] == pytest.approx((0.9 - 0.05) - 1.0)
    assert min(a for a, _ in t.windows) == 0.0  # the earliest traced region starts the axis


def test_window_and_counts():
    t = _trace()
    w = t.window(0.0, 0.7)
    assert w.count("MPI_Send") == 2 and w.count("MPI_Barrier") == 0
    assert t.count("MPI_Barrier", 1) == 1 and t.kinds()[0] == "MPI_Send"


def test_chrome_trace_events(tmp_path):
    from mpiworkbench.trace.chrome import write_chrome

    t = _trace()
    path = write_chrome(t, tmp_path / "t.json")
    data = json.loads(path.read_text())
    calls = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(calls) == len(t) and calls[0]["name"] == "MPI_Send" and calls[0]["pid"] == 0
    assert calls[0]["ts"] == pytest.approx(0.5e6) and calls[0]["dur"] == pytest.approx(0.1e6)
    starts = [e for e in data["traceEvents"] if e["ph"] == "s"]
    ends = [e for e in data["traceEvents"] if e["ph"] == "f"]
    assert len(starts) == len(ends) == 3 and {e["pid"] for e in ends} == {1}
    assert {e["args"]["name"] for e in data["traceEvents"] if e["name"] == "process_name"} == {"rank 0 (h)", "rank 1 (h)"}


def test_plots_draw_calls_arrows_and_matrix():
    from mpiworkbench.plot import trace as plot

    t = _trace()
    fig = plot.timeline(t)
    ax = fig.axes[0]

    def calls(ax):  # the bars: one path per call in the "calls" collections
        return sum(len(c.get_paths()) for c in ax.collections if c.get_gid() == "calls")

    assert calls(ax) == len(t)  # one bar per call
    assert sum(1 for child in ax.texts if child.arrow_patch is not None) == 3  # one arrow per message
    zoom = plot.timeline(t, 0.0, 0.7)
    assert 0 < calls(zoom.axes[0]) < len(t)
    with pytest.raises(ValueError, match="t1 must be after t0"):
        plot.timeline(t, 1.0, 0.5)
    m = plot.matrix_figure(t, "messages")
    assert "3" in [x.get_text() for x in m.axes[0].texts]
    k = plot.time_per_kind_figure(t)
    assert "compute" in k.axes[0].get_legend_handles_labels()[1]


# ---------------------------------------------------------------------- hang reasoning
def _inflight(rank, call, peer=-1, tag=-3, nbytes=0, seconds=30.0, sent=()):
    return hang.InFlight(pid=100 + rank, rank=rank, size=2, calls=5, call=call, peer=peer, tag=tag,
                         bytes=nbytes, seconds=seconds, sent=list(sent))


def test_raise_before_barrier():
    states = [hang.RankState(0, "failed", "RuntimeError: boom", _inflight(0, None)),
              hang.RankState(1, "running", "", _inflight(1, "MPI_Barrier", seconds=30.2))]
    causes = hang.diagnose(states)
    assert causes == ["rank 0 raised before the barrier (rank 0: RuntimeError: boom); rank 1 waits in MPI_Barrier for 30 s"]
    lines = hang.report_lines(states)
    assert lines[1].startswith("  rank 1: blocked in MPI_Barrier() for 30.2 s")


def test_send_send_deadlock():
    states = [hang.RankState(r, "running", "", _inflight(r, "MPI_Send", 1 - r, 5, 1 << 24)) for r in (0, 1)]
    [cause] = hang.diagnose(states)
    assert "ranks 0 and 1 both block in MPI_Send to each other" in cause and "send–send deadlock" in cause


def test_wrong_tag_is_named_before_the_receive_receive_wait_it_causes():
    states = [hang.RankState(0, "running", "", _inflight(0, "MPI_Mprobe", 1, 6, sent=[(1, 5, 12, 0.0)])),
              hang.RankState(1, "running", "", _inflight(1, "MPI_Mprobe", 0, 7))]
    [cause] = hang.diagnose(states)
    assert cause.startswith("rank 1 waits in MPI_Mprobe(source=0, tag=7), but rank 0 never sent tag 7")
    assert "it sent tag 5" in cause


def test_receive_receive_deadlock():
    states = [hang.RankState(r, "running", "", _inflight(r, "MPI_Recv", 1 - r, 0)) for r in (0, 1)]
    assert hang.diagnose(states) == ["ranks 0 and 1 both wait to receive from each other "
                                     "(a receive–receive deadlock): one of them must send first"]


def test_user_line_skips_library_frames():
    stack = [
        "Thread 0x00007f (most recent call first):",
        '  File "/x/site-packages/threading.py", line 320 in wait',
        "",
        "Current thread 0x00007e (most recent call first):",
        '  File "/x/lib/python3.11/site-packages/ipykernel/x.py", line 3 in f',
        '  File "<ipython-input-1>", line 4 in <module>',
        '  File "/x/site-packages/ipyparallel/engine.py", line 9 in run',
    ]
    assert hang.user_line(stack) == "<ipython-input-1>:4 in <module>"
    assert hang.user_line([]) is None


#: An idle rank of an editable install: the engine's loop under ``python -c`` (how it is started).
IDLE_ENGINE = [
    "Current thread 0x00007e (most recent call first):",
    '  File "/usr/lib/python3.11/selectors.py", line 468 in select',
    '  File "/x/lib/python3.11/site-packages/ipyparallel/engine/app.py", line 9 in start',
    '  File "/src/mpiworkbench/client/cluster/engine_start.py", line 390 in main',
    '  File "/src/mpiworkbench/client/cluster/engine_start.py", line 400 in <module>',
    '  File "<frozen runpy>", line 88 in _run_code',
    '  File "<string>", line 1 in <module>',
]


def test_an_idle_engine_has_no_user_line_but_code_run_from_a_string_has():
    assert hang.user_line(IDLE_ENGINE) is None
    busy = IDLE_ENGINE[:1] + ['  File "<string>", line 3 in spin'] + IDLE_ENGINE[1:]
    assert hang.user_line(busy) == "<string>:3 in spin"
    # after a debugging session, the rank's own late-stop guard runs in a thread of its own: not the user's line
    guarded = IDLE_ENGINE + ["Thread 0x00007f (most recent call first):",
                             '  File "/src/mpiworkbench/client/cluster/rank_debugpy.py", line 80 in watch',
                             '  File "/usr/lib/python3.11/threading.py", line 982 in run']
    assert hang.user_line(guarded) is None


def test_a_call_left_running_is_blocked_only_once_a_rank_has_left_it():
    in_mpi = _inflight(0, "MPI_Barrier", -1, 0)
    assert not _left_the_call(hang.RankState(0, "running", "", in_mpi, ["x"]))
    computing = hang.RankState(1, "running", "", None, IDLE_ENGINE[:1] + ['  File "/tmp/ipykernel_1/2.py", line 3 in <module>'])
    assert not _left_the_call(computing)  # still runs the cell: late, not gone
    assert _left_the_call(hang.RankState(1, "running", "", None, IDLE_ENGINE))  # back in its engine's loop
    assert _left_the_call(hang.RankState(1, "failed", "KeyboardInterrupt", None, []))
    # a dump cut short (the rank waited for a core between two lines), or no stack at all: not known to have left
    cut_short = IDLE_ENGINE[:3] + [stacks.CUT]
    assert not _left_the_call(hang.RankState(1, "running", "", None, cut_short))
    assert not _left_the_call(hang.RankState(1, "running", "", None, []))


def test_a_rank_that_has_not_begun_the_cell_is_not_taken_for_one_that_left_it():
    """Under load a rank may take the cell up seconds late: back in its engine's loop like a rank
    that left the cell, but its ``execute_input`` has not come in. Seen in CI: leaving a debugging
    session refused the next call, naming a rank that had not begun the cell yet."""
    from types import SimpleNamespace as Part

    def call(inputs: list, announces: bool = True) -> Part:
        return Part(ar=Part(_targets=[7, 8, 9], _metadata=[{"execute_input": given} for given in inputs]),
                    announces_start=announces)

    ranks = {7: 0, 8: 1, 9: 2}
    assert _not_begun(call(["x = 1", None, "x = 1"]), ranks) == {1}
    assert _not_begun(call(["x = 1"] * 3), ranks) == set()
    # a silent cell or a function call says nothing as it begins: no rank is known not to have begun it
    assert _not_begun(call([None] * 3, announces=False), ranks) == set()


def test_a_stack_is_read_whole_even_when_its_writer_waits_between_lines(tmp_path, monkeypatch):
    """faulthandler writes line by line from the rank's signal handler; on a loaded machine the rank
    may wait for a core between two lines. The reader waits for the main thread's outermost frame
    (the file's header, written at arming), and marks a dump not whole by its time-out."""
    import threading

    path = tmp_path / "stack"
    path.write_text(f"{stacks.HEADER}{IDLE_ENGINE[-1]}\n" + "an earlier dump\n")
    monkeypatch.setattr(stacks, "stack_path", lambda pid: str(path))

    def write_slowly(lines):
        def run():
            for line in lines:
                with open(path, "a") as out:
                    out.write(line + "\n")
                time.sleep(0.3)  # far longer than the reader's look interval
        return lambda *_: threading.Thread(target=run, daemon=True).start() or True  # (sent)

    monkeypatch.setattr(stacks.processes, "send", write_slowly(IDLE_ENGINE))
    whole = stacks.python_stack(12345, timeout=30, started=1)
    assert whole == IDLE_ENGINE and stacks.stack_whole(whole)
    monkeypatch.setattr(stacks.processes, "send", write_slowly(IDLE_ENGINE[:3]))
    cut = stacks.python_stack(12345, timeout=2, started=1)
    assert cut == IDLE_ENGINE[:3] + [stacks.CUT] and not stacks.stack_whole(cut)
    assert not _left_the_call(hang.RankState(1, "running", "", None, cut))


def test_an_armed_process_reads_its_own_whole_stack_from_its_header(tmp_path, monkeypatch):
    monkeypatch.setattr(stacks, "stack_path", lambda pid: str(tmp_path / f"{pid}.stack"))
    with stacks.open_for_dumps(1) as stream:
        assert stream.tell() > 0
    header = (tmp_path / "1.stack").read_text()
    assert header == f"{stacks.HEADER}{hang.main_stack()[-1]}\n"


def test_read_slot_of_a_process_without_one():
    assert hang.read_slot(2**22 + 12345) is None
    assert hang.python_stack(2**22 + 12345) == []


def test_sweep_removes_only_files_of_processes_that_are_gone(tmp_path):
    import os

    gone = 2**22 + 54321
    for name in (f"mpiworkbench-{gone}.slot", f"mpiworkbench-{gone}.stack", f"mpiworkbench-{os.getpid()}.slot", "other.txt"):
        (tmp_path / name).write_text("x")
    assert hang.sweep_stale(str(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"mpiworkbench-{os.getpid()}.slot", "other.txt"])


def test_chrome_json_round_trip():
    t = _trace()
    back = Trace.from_chrome(json.loads(json.dumps(t.to_chrome())))
    assert back.nranks == 2 and back.hosts == ["h", "h"] and len(back) == len(t)
    for name in ("rank", "kind", "peer", "tag", "bytes", "peer2", "tag2"):
        assert back.events[name].tolist() == t.events[name].tolist(), name
    assert np.allclose(back.events["t0"], t.events["t0"]) and np.allclose(back.events["t_done"], t.events["t_done"])
    a, b = back.messages(), t.messages()
    assert a[["src", "dst", "tag", "bytes", "send", "recv"]].tolist() == b[["src", "dst", "tag", "bytes", "send", "recv"]].tolist()
    assert np.allclose(a["t_recv"], b["t_recv"])


def test_unfinished_calls_are_drawn_as_still_blocked():
    from mpiworkbench.plot import trace as plot

    rank0 = np.array([ev("MPI_Barrier", 1.0, 1.1)], EVENT_DTYPE)
    rank1 = np.array([ev("MPI_Barrier", 1.0, 1.1), ev("MPI_Barrier", 1.2, 31.2)], EVENT_DTYPE)
    t = Trace.from_ranks([rank0, rank1], open_last=[False, True])
    assert t.unfinished == [2] and t.events["kind"][2] == KIND["MPI_Barrier"]
    assert t.window(1.15, 40).unfinished == [0]
    fig = plot.timeline(t)
    assert any(x.get_text() == "still in MPI_Barrier" for x in fig.axes[0].texts)


def test_a_report_published_on_another_host_reads_back_with_ages_for_times():
    # what a rank's reporter thread publishes (hang.report) carries send *ages*: each host has
    # its own monotonic clock; read back, only the sends of the hanging execution are kept
    record = _inflight(1, "MPI_Recv", 0, 7, sent=[])
    data = {**{k: v for k, v in record.__dict__.items() if k != "sent"},
            "sent_ages": [(0, 5, 12, 9.0), (0, 6, 12, 0.5)], "stack": ['  File "x.py", line 3 in f']}
    inflight, stack = hang.from_report(json.loads(json.dumps(data)), since_s=2.0)
    assert (inflight.call, inflight.peer, inflight.tag, inflight.rank) == ("MPI_Recv", 0, 7, 1)
    assert [(d, t, b) for d, t, b, _ in inflight.sent] == [(0, 6, 12)], "the send of 9 s ago came before"
    assert stack == ['  File "x.py", line 3 in f']
    assert len(hang.from_report(data)[0].sent) == 2


def test_main_stack_is_read_from_another_thread_in_faulthandlers_format():
    import threading

    seen = []
    reader = threading.Thread(target=lambda: seen.extend(hang.main_stack()))
    reader.start()
    reader.join()
    assert seen[0].startswith("Current thread") and "most recent call first" in seen[0]
    assert hang.user_line(seen).split(" in ")[-1] == "test_main_stack_is_read_from_another_thread_in_faulthandlers_format"


def test_estimated_clock_offsets_are_corrected_so_no_message_is_received_before_its_send():
    # rank 1's clock estimated 30 µs off: its receive of rank 0's message (sent at 100 µs,
    # 20 µs on the way) reads 90 µs, before the send; its reply, sent at 130, arrives at 185
    us = 1e-6
    rank0 = np.array([ev("MPI_Send", 100 * us, 101 * us, peer=1, tag=3),
                      ev("MPI_Recv", 101 * us, 185 * us, peer=1, tag=4, peer2=1, tag2=4)], EVENT_DTYPE)
    rank1 = np.array([ev("MPI_Recv", 50 * us, 90 * us, peer=0, tag=3, peer2=0, tag2=3),
                      ev("MPI_Send", 130 * us, 131 * us, peer=0, tag=4)], EVENT_DTYPE)
    plain = Trace.from_ranks([rank0, rank1], offsets=[0.0, 0.0], hosts=["a", "b"])
    assert (plain.messages()["t_recv"] < plain.messages()["t_send"]).any()
    fixed = Trace.from_ranks([rank0, rank1], offsets=[0.0, 0.0], hosts=["a", "b"], causal=True)
    messages = fixed.messages()
    assert len(messages) == 2 and (messages["t_recv"] >= messages["t_send"]).all()
    # contradictory messages (each faster than zero in turn) are left as they are
    late = rank0.copy()
    late["t1"][1] = 125 * us
    assert Trace.from_ranks([late, rank1], hosts=["a", "b"], causal=True).offsets == [0.0, 0.0]
    assert fixed.offsets[0] == 0.0 and fixed.offsets[1] == pytest.approx(-10e-6), "the smallest shift that does it"
    assert fixed.estimated_offsets == [0.0, 0.0]


def test_report_lines_name_the_host_when_the_world_spans_several():
    states = [hang.RankState(0, "ok", host="node1"),
              hang.RankState(1, "running", "", _inflight(1, "MPI_Recv", 0, 77), host="node2")]
    lines = hang.report_lines(states)
    assert lines[0] == "  rank 0 on node1: finished" and lines[1].startswith("  rank 1 on node2: blocked in MPI_Recv(")
    one_host = [hang.RankState(r.rank, r.state, r.error, r.inflight, host="vm") for r in states]
    assert hang.report_lines(one_host)[0] == "  rank 0: finished", "one host: nothing to tell apart"


def test_a_host_none_of_whose_ranks_answered_is_named_as_cut_off():
    states = [hang.RankState(0, "running", "", _inflight(0, "MPI_Allreduce", -1, -1), host="node1"),
              hang.RankState(1, "running", "", _inflight(1, "MPI_Allreduce", -1, -1), host="node1"),
              hang.RankState(2, "running", host="node2"), hang.RankState(3, "running", host="node2")]
    causes = hang.diagnose(states)
    assert any(c.startswith("nothing came back from node2 (ranks 2, 3) while the ranks on node1 answered")
               and "wb.restart()" in c for c in causes), causes
    # every host silent (no interposer anywhere, say): nothing to tell apart
    quiet = [hang.RankState(r.rank, "running", host=r.host) for r in states]
    assert not any("nothing came back" in c for c in hang.diagnose(quiet))
    # one host: never
    assert not any("nothing came back" in c for c in hang.diagnose([states[0], hang.RankState(1, "running", host="node1")]))


def test_a_hung_worlds_trace_merges_events_published_on_other_hosts():
    """``trace_from_outside`` with every rank elsewhere: each rank's events come from what its
    reporter published (:func:`hang.events_report`), on that host's own monotonic clock, and
    are put on the common wall clock (then corrected causally)."""
    from types import SimpleNamespace

    from mpiworkbench.client.calls import trace as client_trace

    wall = 1.7e9
    # node-a's monotonic clock reads 1000 at wall time `wall`, node-b's 5000
    rank0 = np.array([ev("MPI_Send", 1000.10, 1000.11, peer=1, tag=5, nbytes=8),
                      ev("MPI_Barrier", 1000.30, 1001.0)], EVENT_DTYPE)
    rank1 = np.array([ev("MPI_Recv", 5000.05, 5000.20, peer=0, tag=5, nbytes=8, peer2=0, tag2=5)], EVENT_DTYPE)
    published = [
        {"rank": 0, "events": rank0, "open_last": True, "monotonic": 1001.0, "wall": wall + 1.0},
        {"rank": 1, "events": rank1, "open_last": False, "monotonic": 5001.0, "wall": wall + 1.0},
    ]
    execution = SimpleNamespace(_metadata=[{"data": {hang.EVENTS_KEY: data}} for data in published])
    wb = SimpleNamespace(client=SimpleNamespace(spin=lambda: None),
                         _rank_processes={0: {"host": "node-a", "pid": 1}, 1: {"host": "node-b", "pid": 2}})
    trace = client_trace.trace_from_outside(wb, execution)
    assert trace is not None and trace.hosts == ["node-a", "node-b"]
    messages = trace.messages()
    assert len(messages) == 1 and messages["t_recv"][0] >= messages["t_send"][0]
    # on the wall clock the receive started 0.05 s before the send (as recorded), not 4000 s
    assert messages["t_send"][0] - trace.events[trace.events["rank"] == 1]["t0"][0] == pytest.approx(0.05)
    assert len(trace.unfinished) == 1 and trace.events[trace.unfinished[0]]["rank"] == 0
    assert trace.duration == pytest.approx(0.95), "from the first call to the last: no clock's origin in it"
    # a rank that published nothing (busy outside MPI, say): no trace rather than a partial one
    missing = SimpleNamespace(_metadata=execution._metadata[:1])
    assert client_trace.trace_from_outside(wb, missing) is None


def test_the_stack_signal_reaches_only_the_rank_its_start_time_names(tmp_path, monkeypatch):
    """A rank's pid, once it died, goes to the next process started: the hang report's SIGUSR2
    (whose default action ends a process) must not reach that one."""
    import subprocess
    import sys

    from mpiworkbench.core import shm

    monkeypatch.setattr(stacks, "stack_path", lambda pid: str(tmp_path / f"{pid}.stack"))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        wait = time.monotonic() + 60
        while shm.started(other.pid) is None and time.monotonic() < wait:
            time.sleep(0.01)
        now = shm.started(other.pid)
        (tmp_path / f"{other.pid}.stack").write_text(f"{stacks.HEADER} a dead rank's frame\n")
        assert stacks.python_stack(other.pid, timeout=1, started=now - 1) == []
        assert other.poll() is None  # not signalled: still sleeping
        assert stacks.python_stack(other.pid, timeout=1, started=now) == []  # signalled: SIGUSR2 ends it
        assert other.wait(timeout=60) == -stacks.STACK_SIGNAL
    finally:
        other.kill()
        other.wait()
