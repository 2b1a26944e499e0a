"""Wait states, POP efficiency and the critical path of traces built by hand (no MPI), and
``mpiworkbench trace --analyse`` on a saved trace."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mpiworkbench import cli
from mpiworkbench.plot.trace import write_chrome
from mpiworkbench.trace.critical import critical_path, ideal_runtime
from mpiworkbench.trace.efficiency import efficiency, scaling
from mpiworkbench.trace.events import EVENT_DTYPE, KIND
from mpiworkbench.trace.model import Trace
from mpiworkbench.trace.sites import CallSites
from mpiworkbench.trace.waits import PATTERNS, wait_states


def ev(kind, t0, t1, peer=-1, tag=-3, nbytes=0, peer2=-3, tag2=-3, t_done=0.0, comm=0, req=-1, op=-1, count=1, aux=-1):
    return (t0, t1, t_done, KIND[kind], peer, tag, comm, nbytes, peer2, tag2, req, op, count, aux)


def trace_of(*ranks, end=10.0) -> Trace:
    """A trace of these ranks' events, each rank's region from 0 to *end* (one for all, or per rank)."""
    ends = end if isinstance(end, list) else [end] * len(ranks)
    return Trace.from_ranks([np.array(r, EVENT_DTYPE) for r in ranks], windows=[(1e-9, e) for e in ends])


def only(waits, pattern):
    """The one pattern present, with its waiting rank, cause and seconds."""
    rows = waits.records()
    assert {r["pattern"] for r in rows} == {pattern}, rows
    return rows


def test_late_sender_blocking_nonblocking_persistent_and_probe():
    recv = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                    [ev("MPI_Recv", 1.0, 3.2, peer=0, tag=1, peer2=0, tag2=1)])
    irecv = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                     [ev("MPI_Irecv", 0.5, 0.6, peer=0, tag=1, peer2=0, tag2=1, t_done=3.2, req=0),
                      ev("MPI_Wait", 1.0, 3.2)])
    persistent = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                          [ev("MPI_Recv_init", 0.4, 0.41, peer=0, tag=1, req=0),
                           ev("MPI_Start", 0.5, 0.6, peer=0, tag=1, peer2=0, tag2=1, t_done=3.2, req=0,
                              op=KIND["MPI_Recv_init"]),
                           ev("MPI_Wait", 1.0, 3.2)])
    probe = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                     [ev("MPI_Mprobe", 1.0, 3.15, peer=0, tag=1, peer2=0, tag2=1),
                      ev("MPI_Mrecv", 3.15, 3.2, tag2=1)])
    for trace, call in ((recv, "MPI_Recv"), (irecv, "MPI_Wait"), (persistent, "MPI_Wait"), (probe, "MPI_Mprobe")):
        (row,) = only(wait_states(trace), "Late Sender")
        assert (row["rank"], row["cause_rank"], row["call"]) == (1, 0, call)
        assert row["seconds"] == pytest.approx(2.0)


def test_a_waitall_waits_once_for_the_last_of_its_messages():
    t = trace_of([ev("MPI_Send", 2.0, 2.1, peer=2, tag=1)], [ev("MPI_Send", 3.0, 3.1, peer=2, tag=1)],
                 [ev("MPI_Irecv", 0.5, 0.6, peer=0, tag=1, peer2=0, tag2=1, t_done=3.2, req=0),
                  ev("MPI_Irecv", 0.6, 0.7, peer=1, tag=1, peer2=1, tag2=1, t_done=3.2, req=1),
                  ev("MPI_Waitall", 1.0, 3.2, op=2)])
    (row,) = only(wait_states(t), "Late Sender")
    assert (row["rank"], row["cause_rank"], row["seconds"]) == (2, 1, pytest.approx(2.0))


def test_late_receiver_for_synchronous_sends_only_unless_eager_bytes():
    ssend = trace_of([ev("MPI_Ssend", 1.0, 3.1, peer=1, tag=1)],
                     [ev("MPI_Recv", 3.0, 3.2, peer=0, tag=1, peer2=0, tag2=1)])
    (row,) = only(wait_states(ssend), "Late Receiver")
    assert (row["rank"], row["cause_rank"], row["seconds"]) == (0, 1, pytest.approx(2.0))
    big = trace_of([ev("MPI_Send", 1.0, 3.1, peer=1, tag=1, nbytes=1 << 20)],
                   [ev("MPI_Recv", 3.0, 3.2, peer=0, tag=1, peer2=0, tag2=1)])
    assert len(wait_states(big)) == 0
    (row,) = only(wait_states(big, eager_bytes=65536), "Late Receiver")
    assert row["seconds"] == pytest.approx(2.0)


def test_collective_patterns_and_their_causes():
    def three(kind, starts, root=-1, comm=0):
        return trace_of(*[[ev(kind, s, 5.0, peer=root, comm=comm)] for s in starts])

    nxn = wait_states(three("MPI_Allreduce", [1.0, 2.0, 4.0]))
    assert [nxn.seconds("Wait at N×N", rank=r) for r in range(3)] == [pytest.approx(3.0), pytest.approx(2.0), 0.0]
    assert set(nxn.intervals["cause_rank"].tolist()) == {2}
    barrier = wait_states(three("MPI_Barrier", [1.0, 2.0, 4.0]))
    assert barrier.seconds("Wait at Barrier") == pytest.approx(5.0)
    bcast = wait_states(three("MPI_Bcast", [1.0, 2.0, 4.0], root=2))
    assert [bcast.seconds("Late Broadcast", rank=r) for r in range(3)] == [pytest.approx(3.0), pytest.approx(2.0), 0.0]
    root_late = wait_states(three("MPI_Bcast", [4.0, 2.0, 1.0], root=2))
    assert root_late.seconds() == 0.0  # the root of a broadcast waits for nobody
    reduce = wait_states(three("MPI_Reduce", [1.0, 2.0, 4.0], root=0))
    (row,) = only(reduce, "Early Reduce")
    assert (row["rank"], row["cause_rank"], row["seconds"]) == (0, 2, pytest.approx(3.0))


def test_collectives_on_a_sub_communicator_match_per_communicator():
    # ranks 0 and 1 reduce on a communicator of their own (table index 2: "comm 2"), then all three
    ranks = [[ev("MPI_Allreduce", 1.0, 4.0, comm=2), ev("MPI_Allreduce", 5.0, 6.0, comm=0)],
             [ev("MPI_Allreduce", 4.0, 4.1, comm=2), ev("MPI_Allreduce", 5.5, 6.0, comm=0)],
             [ev("MPI_Allreduce", 5.9, 6.0, comm=0)]]
    w = wait_states(trace_of(*ranks))
    rows = {(r["rank"], r["comm"]): r["seconds"] for r in w.records()}
    assert rows[(0, "comm 2")] == pytest.approx(3.0) and (1, "comm 2") not in rows
    assert rows[(0, "COMM_WORLD")] == pytest.approx(0.9) and rows[(1, "COMM_WORLD")] == pytest.approx(0.4)


def test_summaries_by_pattern_rank_and_call_site():
    t = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                 [ev("MPI_Recv", 1.0, 3.2, peer=0, tag=1, peer2=0, tag2=1)])
    where = CallSites(["prog.py:10 in main", "prog.py:20 in main"],
                      [np.array([2.9]), np.array([0.9])], [np.array([0]), np.array([1])])
    w = wait_states(t, where)
    assert w.by_pattern_rank()["Late Sender"] == [0.0, pytest.approx(2.0)]
    assert set(w.by_pattern_rank()) == set(PATTERNS)
    (row,) = w.by_call_site()
    assert (row["site"], row["cause_site"], row["call"], row["ranks"], row["cause_ranks"]) == (
        "prog.py:20 in main", "prog.py:10 in main", "MPI_Recv", [1], [0])
    assert "prog.py:20" in w.text() and json.dumps(w.to_dict())
    with pytest.raises(ValueError, match="unknown wait-state pattern 'Late'"):
        w.seconds("Late")


def _compute_only(useful: list[float], runtime: float = 10.0) -> Trace:
    """Each rank computes its *useful* seconds, then waits in a final barrier until *runtime*."""
    return trace_of(*[[ev("MPI_Barrier", u, runtime)] for u in useful], end=runtime)


def test_load_balance_of_an_imbalanced_and_of_a_balanced_run():
    imbalanced = efficiency(_compute_only([10.0, 6.0]))  # mean 8 / max 10
    assert imbalanced.load_balance == pytest.approx(0.80, abs=0.02)
    balanced = efficiency(_compute_only([10.0, 10.0, 10.0]))
    assert balanced.load_balance >= 0.95 and balanced.parallel >= 0.95


def test_factors_multiply_to_the_parallel_efficiency():
    # rank 1 waits for a late message, the message takes 0.5 s on the wire, then both compute
    t = trace_of([ev("MPI_Send", 3.0, 3.5, peer=1, tag=1), ev("MPI_Barrier", 8.0, 9.0)],
                 [ev("MPI_Recv", 1.0, 3.5, peer=0, tag=1, peer2=0, tag2=1), ev("MPI_Barrier", 9.0, 9.0)], end=9.0)
    e = efficiency(t)
    assert e.communication == pytest.approx(e.serialisation * e.transfer)
    assert e.parallel == pytest.approx(e.load_balance * e.communication)
    assert e.parallel == pytest.approx(np.mean(e.useful) / e.runtime)
    # on an ideal network the send takes no time: rank 1 finishes 0.5 s earlier
    assert e.ideal_runtime == pytest.approx(8.5)
    assert 0 < e.transfer < 1 and 0 < e.serialisation <= 1


def test_scaling_gives_computation_scalability_and_global_efficiency():
    rows = scaling([_compute_only([10.0]), _compute_only([6.0, 6.0], runtime=6.0)])
    assert rows[1]["computation_scalability"] == pytest.approx(10.0 / 12.0)
    assert rows[1]["global_efficiency"] == pytest.approx(rows[1]["parallel"] * 10.0 / 12.0)


def test_critical_path_through_a_chain_of_messages():
    # rank 0 computes 0–3, sends to 1; rank 1 computes 3.1–6, sends to 2; rank 2 computes to 9
    t = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                 [ev("MPI_Recv", 0.5, 3.1, peer=0, tag=1, peer2=0, tag2=1), ev("MPI_Send", 6.0, 6.1, peer=2, tag=1)],
                 [ev("MPI_Recv", 0.5, 6.1, peer=1, tag=1, peer2=1, tag2=1)], end=[3.1, 6.1, 9.0])
    path = critical_path(t)
    assert [int(r) for r in path.segments["rank"]] == [0, 1, 2]
    assert path.seconds.tolist() == pytest.approx([3.0, 3.0, 3.0], abs=1e-6)
    assert path.shares.sum() == pytest.approx(1.0) and path.hops == 2
    # the path leaves a rank where its send began: the receives' ends are on it, the sends not
    assert {row["call"] for row in path.sites} == {"MPI_Recv"}
    assert ideal_runtime(t) == pytest.approx(9.0 - 0.2, abs=1e-6)  # the two sends take no time


def test_cli_analyse_on_a_saved_trace(tmp_path, capsys):
    t = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1), ev("MPI_Allreduce", 4.0, 5.0)],
                 [ev("MPI_Recv", 1.0, 3.2, peer=0, tag=1, peer2=0, tag2=1), ev("MPI_Allreduce", 5.0, 5.0)])
    saved = tmp_path / "run.json"
    write_chrome(t, saved)
    assert cli.main(["trace", "--analyse", "--from", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "Late Sender" in out and "POP factors" in out and "critical path" in out
    data = json.loads((tmp_path / "run.analysis.json").read_text())
    assert set(data) >= {"trace", "nranks", "runtime_s", "wait_states", "efficiency", "critical_path"}
    assert data["wait_states"]["by_pattern_rank"]["Late Sender"][1] == pytest.approx(2.0)
    assert data["wait_states"]["by_pattern_rank"]["Wait at N×N"][0] == pytest.approx(1.0)
    assert data["efficiency"]["parallel"] == pytest.approx(
        data["efficiency"]["load_balance"] * data["efficiency"]["serialisation"] * data["efficiency"]["transfer"])
    other = tmp_path / "elsewhere.json"
    assert cli.main(["trace", "--analyse", "--from", str(saved), "--analysis", str(other)]) == 0
    assert json.loads(other.read_text())["nranks"] == 2
    capsys.readouterr()
    assert cli.main(["trace", "--from", str(saved)]) == 2
    assert "--from TRACE analyses a saved trace" in capsys.readouterr().err


def test_wait_states_json_beside_an_otf2_archive(tmp_path):
    pytest.importorskip("otf2")
    from mpiworkbench.trace.otf2 import write_otf2

    t = trace_of([ev("MPI_Send", 3.0, 3.1, peer=1, tag=1)],
                 [ev("MPI_Recv", 1.0, 3.2, peer=0, tag=1, peer2=0, tag2=1)])
    write_otf2(t, tmp_path / "archive", waits=wait_states(t))
    data = json.loads((tmp_path / "archive" / "wait_states.json").read_text())
    assert data["format"] == "mpiworkbench wait states" and data["patterns"] == list(PATTERNS)
    (row,) = data["intervals"]
    assert (row["pattern"], row["rank"], row["cause_rank"], row["call"]) == ("Late Sender", 1, 0, "MPI_Recv")
    assert row["seconds"] == pytest.approx(2.0)
