"""A trace as an OTF2 archive, read back with the reference library's reader: one location per
rank, a region per call kind, every send and matched receive as an MPI record (the same messages
as ``Trace.messages()`` and the Chrome JSON's arrows), collectives on their communicator, and
completions of non-blocking calls where they happened; destinations refused before anything runs."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

otf2 = pytest.importorskip("otf2", reason="the OTF2 export needs pip install 'mpiworkbench[otf2]'")

from mpiworkbench.trace import events as E  # noqa: E402
from mpiworkbench.trace import model  # noqa: E402
from mpiworkbench.trace.model import Trace  # noqa: E402
from mpiworkbench.trace.otf2 import check_destination, read_counts, write_otf2  # noqa: E402


def ev(kind, t0, t1, peer=-1, tag=-3, nbytes=0, peer2=-3, tag2=-3, t_done=0.0, comm=0, op=-1):
    """One raw event; fields by name, so that fields added to EVENT_DTYPE later keep a zero."""
    row = np.zeros((), E.EVENT_DTYPE)
    values = dict(t0=t0, t1=t1, t_done=t_done, kind=E.KIND[kind], peer=peer, tag=tag, comm=comm, bytes=nbytes,
                  peer2=peer2, tag2=tag2, op=op)
    for name, value in values.items():
        if name in E.EVENT_DTYPE.names:
            row[name] = value
    return row


def _rank(*rows):
    return np.array([row.item() for row in rows], E.EVENT_DTYPE)


def _comm(id_, name, ranks, kind, parent):
    make = getattr(model, "Communicator", None)
    if make is not None:
        try:
            return make(id=id_, name=name, ranks=tuple(ranks), kind=kind, parent=parent)
        except TypeError:  # its fields differ from what this test knows: what the writer reads is enough
            pass
    return SimpleNamespace(id=id_, name=name, ranks=tuple(ranks), kind=kind, parent=parent)


def two_ranks() -> Trace:
    """Blocking sends both ways, a Sendrecv pair, a barrier; no communicators (COMM_WORLD only)."""
    r0 = _rank(
        ev("MPI_Send", 1.0, 1.1, peer=1, tag=7, nbytes=800),
        ev("MPI_Recv", 1.2, 1.4, peer=1, tag=9, nbytes=16, peer2=1, tag2=9),
        ev("MPI_Sendrecv", 1.5, 1.6, peer=1, tag=3, nbytes=64, peer2=1, tag2=3),
        ev("MPI_Barrier", 1.7, 1.8),
    )
    r1 = _rank(
        ev("MPI_Recv", 0.9, 1.15, peer=-2, tag=-1, nbytes=800, peer2=0, tag2=7),  # any source, any tag
        ev("MPI_Send", 1.3, 1.31, peer=0, tag=9, nbytes=16),
        ev("MPI_Sendrecv", 1.5, 1.6, peer=0, tag=3, nbytes=64, peer2=0, tag2=3),
        ev("MPI_Barrier", 1.75, 1.8),
    )
    return Trace.from_ranks([r0, r1], hosts=["a", "a"], windows=[(0.5, 2.0), (0.5, 2.0)])


#: Communicator 1: ranks 2 and 0, in that order (rank 2 is its rank 0).
SUB = (2, 0)


def three_ranks() -> Trace:
    """Isend/Irecv completed in later waits, an Iallreduce completed after later calls, a Bcast on
    COMM_WORLD, and a Barrier, a Reduce and a Send on a second communicator."""
    r0 = _rank(
        ev("MPI_Send", 1.0, 1.1, peer=1, tag=7, nbytes=800),
        ev("MPI_Isend", 1.2, 1.21, peer=2, tag=8, nbytes=40, t_done=1.6),
        ev("MPI_Iallreduce", 1.3, 1.31, nbytes=8, t_done=2.2),
        ev("MPI_Wait", 1.5, 1.6),  # completes the Isend
        ev("MPI_Bcast", 1.7, 1.8, peer=0, nbytes=24),
        ev("MPI_Barrier", 1.9, 2.0, comm=1),
        ev("MPI_Recv", 2.0, 2.1, peer=1, tag=9, nbytes=16, peer2=1, tag2=9),
        ev("MPI_Wait", 2.15, 2.2),  # completes the Iallreduce
        ev("MPI_Reduce", 2.3, 2.4, peer=2, nbytes=8, comm=1),
        ev("MPI_Recv", 2.5, 2.6, peer=2, tag=5, nbytes=4, peer2=2, tag2=5, comm=1),
    )
    r1 = _rank(
        ev("MPI_Recv", 0.9, 1.15, peer=0, tag=7, nbytes=800, peer2=0, tag2=7),
        ev("MPI_Iallreduce", 1.3, 1.32, nbytes=8, t_done=1.4),
        ev("MPI_Wait", 1.35, 1.4),
        ev("MPI_Bcast", 1.72, 1.8, peer=0, nbytes=24),
        ev("MPI_Send", 1.95, 1.96, peer=0, tag=9, nbytes=16),
    )
    r2 = _rank(
        ev("MPI_Irecv", 1.1, 1.11, peer=-2, tag=-1, nbytes=40, peer2=0, tag2=8, t_done=1.65),
        ev("MPI_Iallreduce", 1.3, 1.33, nbytes=8, t_done=1.65),
        ev("MPI_Waitall", 1.5, 1.65),  # completes both
        ev("MPI_Bcast", 1.75, 1.8, peer=0, nbytes=24),
        ev("MPI_Barrier", 1.85, 2.0, comm=1),
        ev("MPI_Reduce", 2.25, 2.4, peer=2, nbytes=8, comm=1),
        ev("MPI_Send", 2.45, 2.5, peer=0, tag=5, nbytes=4, comm=1),
    )
    trace = Trace.from_ranks([r0, r1, r2], hosts=["a", "a", "b"], windows=[(0.5, 3.0)] * 3)
    trace.comms = [_comm(0, "COMM_WORLD", range(3), "world", None), _comm(1, "split color=0", SUB, "split", 0)]
    return trace


def _read(anchor):
    """Per location (rank): its records in order, as the otf2 reader gives them."""
    out: dict[int, list] = {}
    with otf2.reader.open(str(anchor)) as reader:
        rank_of = {loc: i for i, loc in enumerate(reader.definitions.locations)}
        assert reader.timer_resolution == 1_000_000_000
        for location, event in reader.events:
            out.setdefault(rank_of[location], []).append(event)
        out["_locations"] = [(loc.name, loc.group.name, loc.group.system_tree_parent.name)
                             for loc in reader.definitions.locations]
        out["_comms"] = {c.name: [m.name for m in c.group.members] for c in reader.definitions.comms}
        regions = {r.name: r for r in reader.definitions.regions}
        out["_roles"] = {name: r.region_role for name, r in regions.items()}
        out["_paradigms"] = {r.paradigm for r in regions.values()}
    return out


def _rank_index(location) -> int:
    return int(location.name.split()[-1])


def _messages_of(records, kinds, peer_field) -> Counter:
    """(sender, receiver, tag, bytes) of the point-to-point records of every location."""
    out: Counter = Counter()
    for rank, events in records.items():
        if not isinstance(rank, int):
            continue
        for e in events:
            if type(e).__name__ in kinds:
                peer = _rank_index(e.communicator.location(getattr(e, peer_field)))
                pair = (rank, peer) if peer_field == "receiver" else (peer, rank)
                out[(*pair, int(e.msg_tag), int(e.msg_length))] += 1
    return out


@pytest.mark.parametrize("make", [two_ranks, three_ranks])
def test_counts_per_location_match_the_trace_and_the_chrome_arrows(tmp_path, make):
    trace = make()
    anchor = write_otf2(trace, tmp_path / "otf2")
    assert anchor == tmp_path / "otf2" / "traces.otf2" and anchor.is_file()
    counts = read_counts(anchor)
    assert read_counts(tmp_path / "otf2") == counts  # the directory names its one anchor
    chrome = trace.to_chrome()["traceEvents"]
    arrows_from = Counter(e["pid"] for e in chrome if e["ph"] == "s")
    arrows_to = Counter(e["pid"] for e in chrome if e["ph"] == "f")
    assert sorted(counts) == list(range(trace.nranks))
    for rank in range(trace.nranks):
        ev_ = trace.of_rank(rank)
        c = counts[rank]
        assert c["name"] == f"rank {rank}"
        assert c["Enter"] == c["Leave"] == len(ev_)
        assert c["regions"] == dict(Counter(E.KINDS[k] for k in ev_["kind"]))
        sends = sum(int(k) in E.SENDS and p >= 0 for k, p in zip(ev_["kind"], ev_["peer"]))
        receives = sum(int(k) in E.RECEIVES and s >= 0 for k, s in zip(ev_["kind"], ev_["peer2"]))
        assert c["MpiSend"] == sends == arrows_from[rank]
        assert c["MpiRecv"] == receives == arrows_to[rank]
        blocking = sum(int(k) in E.COLLECTIVES for k in ev_["kind"])
        assert c["MpiCollectiveBegin"] == c["MpiCollectiveEnd"] == blocking
        nonblocking = sum(int(k) in E.NONBLOCKING_COLLECTIVES for k in ev_["kind"])
        assert c["NonBlockingCollectiveRequest"] == c["NonBlockingCollectiveComplete"] == nonblocking


@pytest.mark.parametrize("make", [two_ranks, three_ranks])
def test_messages_read_back_are_the_traces_messages(tmp_path, make):
    trace = make()
    records = _read(write_otf2(trace, tmp_path / "otf2"))
    expected = Counter((int(m["src"]), int(m["dst"]), int(m["tag"]), int(m["bytes"])) for m in trace.messages())
    assert sum(expected.values()) > 0
    assert _messages_of(records, ("MpiSend", "MpiIsend"), "receiver") == expected
    assert _messages_of(records, ("MpiRecv", "MpiIrecv"), "sender") == expected


def test_definitions_locations_hosts_regions_and_communicators(tmp_path):
    records = _read(write_otf2(three_ranks(), tmp_path / "otf2"))
    assert records["_locations"] == [("rank 0", "rank 0", "a"), ("rank 1", "rank 1", "a"), ("rank 2", "rank 2", "b")]
    # members in the communicator's own rank order
    assert records["_comms"]["COMM_WORLD"] == ["rank 0", "rank 1", "rank 2"]
    assert records["_comms"]["split color=0"] == ["rank 2", "rank 0"]
    roles = records["_roles"]
    assert roles["MPI_Send"] == otf2.RegionRole.POINT2POINT and roles["MPI_Barrier"] == otf2.RegionRole.BARRIER
    assert roles["MPI_Bcast"] == otf2.RegionRole.COLL_ONE2ALL and roles["MPI_Reduce"] == otf2.RegionRole.COLL_ALL2ONE
    assert roles["MPI_Iallreduce"] == otf2.RegionRole.COLL_ALL2ALL
    assert records["_paradigms"] == {otf2.Paradigm.MPI}


def test_collectives_carry_their_communicator_root_and_bytes(tmp_path):
    records = _read(write_otf2(three_ranks(), tmp_path / "otf2"))
    ends = {rank: [e for e in records[rank] if type(e).__name__ == "MpiCollectiveEnd"] for rank in range(3)}
    assert [(e.collective_op, e.communicator.name) for e in ends[0]] == [
        (otf2.CollectiveOp.BCAST, "COMM_WORLD"), (otf2.CollectiveOp.BARRIER, "split color=0"),
        (otf2.CollectiveOp.REDUCE, "split color=0")]
    assert [e.communicator.name for e in ends[1]] == ["COMM_WORLD"]
    bcast0, bcast1 = ends[0][0], ends[1][0]
    assert bcast0.communicator.location(bcast0.root).name == "rank 0"
    assert (bcast0.size_sent, bcast0.size_received) == (24, 0) and (bcast1.size_sent, bcast1.size_received) == (0, 24)
    reduce0 = ends[0][2]
    # the root is world rank 2: rank 0 of the sub-communicator
    assert reduce0.root == 0 and reduce0.communicator.location(reduce0.root).name == "rank 2"
    barrier = ends[0][1]
    assert barrier.root == otf2.Undefined.UINT32.value
    # a point-to-point peer on the sub-communicator is named by its rank there
    send2 = next(e for e in records[2] if type(e).__name__ == "MpiSend" and e.communicator.name == "split color=0")
    assert send2.receiver == 1 and send2.communicator.location(send2.receiver).name == "rank 0"


def test_times_never_go_back_and_completions_are_where_they_happened(tmp_path):
    trace = three_ranks()
    records = _read(write_otf2(trace, tmp_path / "otf2"))
    ns = lambda t: round(t * 1e9)  # noqa: E731
    for rank in range(3):
        times = [e.time for e in records[rank]]
        assert times == sorted(times)
        depth = 0
        for e in records[rank]:  # Enter/Leave strictly alternate: calls do not nest
            depth += {"Enter": 1, "Leave": -1}.get(type(e).__name__, 0)
            assert depth in (0, 1)
        assert depth == 0
    r0 = records[0]
    names = [type(e).__name__ for e in r0]
    # the Iallreduce started at 1.3 completes at 2.2, inside the second Wait, after later calls
    done = names.index("NonBlockingCollectiveComplete")
    complete = r0[done]
    t0 = trace.of_rank(0)
    assert complete.time == ns(float(t0["t_done"][2]))
    assert complete.collective_op == otf2.CollectiveOp.ALLREDUCE and complete.communicator.name == "COMM_WORLD"
    assert names[done - 1] == "Enter" and r0[done - 1].region.name == "MPI_Wait"
    assert names.index("MpiCollectiveEnd") < done  # the Bcast came before it completed
    request = next(e for e in r0 if type(e).__name__ == "NonBlockingCollectiveRequest")
    assert request.request_id == complete.request_id and request.time == ns(float(t0["t0"][2]))
    # the Isend completes inside the first Wait
    isend = next(e for e in r0 if type(e).__name__ == "MpiIsend")
    isend_done = next(e for e in r0 if type(e).__name__ == "MpiIsendComplete")
    assert isend_done.request_id == isend.request_id and isend_done.time == ns(float(t0["t_done"][1]))
    at = names.index("MpiIsendComplete")
    assert names[at - 1] == "Enter" and r0[at - 1].region.name == "MPI_Wait" and names[at + 1] == "Leave"
    # the any-source Irecv: a request at the call, the receive at the Waitall that completed it
    r2 = records[2]
    names2 = [type(e).__name__ for e in r2]
    assert names2[:3] == ["Enter", "MpiIrecvRequest", "Leave"]
    irecv = r2[names2.index("MpiIrecv")]
    assert irecv.time == ns(float(trace.of_rank(2)["t_done"][0])) and irecv.communicator.location(irecv.sender).name == "rank 0"


def test_an_unfinished_nonblocking_call_leaves_a_request_open_and_the_archive_valid(tmp_path):
    r0 = _rank(ev("MPI_Isend", 1.0, 1.01, peer=1, tag=1, nbytes=8), ev("MPI_Ibarrier", 1.1, 1.11))
    r1 = _rank(ev("MPI_Recv", 1.0, 1.2, peer=0, tag=1, nbytes=8, peer2=0, tag2=1), ev("MPI_Ibarrier", 1.1, 1.11))
    trace = Trace.from_ranks([r0, r1])
    counts = read_counts(write_otf2(trace, tmp_path / "otf2"))
    assert counts[0]["MpiSend"] == 1 and counts[0]["records"].get("MpiIsendComplete", 0) == 0
    assert counts[0]["NonBlockingCollectiveRequest"] == 1 and counts[0]["NonBlockingCollectiveComplete"] == 0
    assert counts[1]["MpiRecv"] == 1


def test_an_empty_trace_is_an_archive_of_idle_locations(tmp_path):
    trace = Trace.from_ranks([_rank(), _rank()])
    counts = read_counts(write_otf2(trace, tmp_path / "otf2"))
    assert [c["name"] for c in counts.values()] == ["rank 0", "rank 1"]
    assert all(c["records"] == {} for c in counts.values())


def test_an_existing_empty_directory_is_used(tmp_path):
    (tmp_path / "otf2").mkdir()
    assert write_otf2(two_ranks(), tmp_path / "otf2", archive_name="wave").name == "wave.otf2"


def test_a_destination_that_cannot_be_written_is_refused_with_what_to_do(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    with pytest.raises(ValueError, match=rf"{full} exists and is not empty; remove it or name a new directory"):
        write_otf2(two_ranks(), full)
    missing = tmp_path / "no" / "such"
    with pytest.raises(ValueError, match=rf"the directory {tmp_path / 'no'} does not exist; create it first"):
        write_otf2(two_ranks(), missing)
    with pytest.raises(ValueError, match="is a file; name a directory"):
        check_destination(full / "x")
    assert not (tmp_path / "no").exists() and sorted(p.name for p in full.iterdir()) == ["x"]


def test_a_missing_otf2_package_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "otf2", None)  # import otf2 now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'mpiworkbench\[otf2\]'"):
        write_otf2(two_ranks(), tmp_path / "otf2")
    assert not (tmp_path / "otf2").exists()


# ---------------------------------------------------------------------- the CLI
def _mpiworkbench(*argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpiworkbench", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=600, check=False)


@pytest.mark.parametrize("argv, said", [
    (["--out", "{tmp}/no/such/t.json"], "the directory {tmp}/no/such does not exist"),
    (["--otf2", "{tmp}/no/such"], "the directory {tmp}/no does not exist"),
    (["--out", "{tmp}/t.json", "--otf2", "{tmp}/full"], "{tmp}/full exists and is not empty"),
])
def test_the_cli_refuses_an_output_before_any_job_runs(tmp_path, argv, said):
    work = tmp_path / "work"
    (work / "full").mkdir(parents=True)
    (work / "full" / "keep").write_text("")
    argv = [a.format(tmp=work) for a in argv]
    proc = _mpiworkbench("trace", *argv, "--", "wave", "--np", "2", "--mesh", "9", "--steps", "1", cwd=work)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert said.format(tmp=work) in proc.stderr, proc.stderr
    # refused up front: no rank started, nothing printed, nothing written
    assert "mpiexec" not in proc.stderr.lower() and proc.stdout == "", proc.stdout
    assert sorted(str(p.relative_to(work)) for p in work.rglob("*")) == ["full", "full/keep"]


def test_the_cli_writes_an_archive_with_the_json_s_messages(tmp_path):
    import json

    out, archive = tmp_path / "w.json", tmp_path / "otf2"
    proc = _mpiworkbench("trace", "--otf2", str(archive), "--out", str(out), "--", "wave", "--np", "2",
                         "--mesh", "17", "--steps", "3", "--dims", "2,1,1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"OTF2 archive written to {archive / 'traces.otf2'}" in proc.stdout
    counts = read_counts(archive / "traces.otf2")
    data = json.loads(out.read_text())["traceEvents"]
    arrows_from = Counter(e["pid"] for e in data if e["ph"] == "s")
    arrows_to = Counter(e["pid"] for e in data if e["ph"] == "f")
    calls = Counter(e["pid"] for e in data if e["ph"] == "X")
    for rank in range(2):
        assert counts[rank]["Enter"] == calls[rank]
        assert counts[rank]["MpiSend"] == arrows_from[rank] >= 3  # the halo: one message a step at least
        assert counts[rank]["MpiRecv"] == arrows_to[rank]


def test_comm_self_is_an_otf2_self_group(tmp_path):
    # a rank's Sendrecv to itself and a barrier on COMM_SELF (a benchmark's loop-back)
    r0 = _rank(ev("MPI_Sendrecv", 1.0, 1.1, peer=0, tag=1, nbytes=8, peer2=0, tag2=1, comm=1),
               ev("MPI_Barrier", 1.2, 1.3, comm=1))
    trace = Trace.from_ranks([r0])
    trace.comms = [_comm(0, "COMM_WORLD", [0], "world", None), _comm(1, "COMM_SELF", [], "self", None)]
    with otf2.reader.open(str(write_otf2(trace, tmp_path / "otf2"))) as reader:
        self_comm = next(c for c in reader.definitions.comms if c.name == "COMM_SELF")
        assert self_comm.group.group_type == otf2.GroupType.COMM_SELF
        p2p = [e for _, e in reader.events if type(e).__name__ in ("MpiSend", "MpiRecv", "MpiCollectiveEnd")]
    assert [(type(e).__name__, e.communicator.name) for e in p2p] == [
        ("MpiSend", "COMM_SELF"), ("MpiRecv", "COMM_SELF"), ("MpiCollectiveEnd", "COMM_SELF")]
    assert p2p[0].receiver == 0 and p2p[1].sender == 0
