"""The interposer records what the code did: counts, peers, bytes, send↔receive matching, the
rounds of a binomial cascade, numba-mpi and the C backend as well as mpi4py — and nothing while off.

The MPI tier runs with the interposer preloaded (``make test-mpi``); without it these tests fail
and say how to run them, unless ``MPIWORKBENCH_INTERPOSER=0`` asks to skip them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from mpiworkbench.trace import library, recorder
from mpiworkbench.trace.events import KIND


pytestmark = pytest.mark.usefixtures("interposer")  # tests/mpi/conftest.py


@pytest.fixture
def comm():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD.Dup()
    yield comm
    comm.Free()


def test_off_records_nothing_but_the_in_flight_record_still_counts(comm):
    lib = library.handle()
    recorder.start(16)
    assert len(recorder.stop()) == 0
    calls = lib.wbtrace_calls()
    buf = np.zeros(4)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    comm.Sendrecv(buf, right, 1, buf.copy(), left, 1)
    comm.Barrier()
    comm.allreduce(1)
    assert len(recorder.local_events()) == 0
    assert lib.wbtrace_calls() >= calls + 3  # every wrapped call passed through, none recorded
    assert not recorder.is_on()


def test_counts_peers_bytes_and_matching(comm):
    rank, size = comm.rank, comm.size
    right, left = (rank + 1) % size, (rank - 1) % size
    n = 100 + rank  # a different message size per sender
    send = np.full(n, rank, dtype=np.float64)
    got = np.empty(100 + left, dtype=np.float64)

    def body():
        comm.Sendrecv(send, right, 7, got, left, 7)                     # buffer API
        reqs = [comm.Irecv(got, left, 8), comm.Isend(send, right, 8)]   # nonblocking
        from mpi4py import MPI
        MPI.Request.Waitall(reqs)
        obj = comm.sendrecv({"from": rank}, right, 9, None, left, 9)    # object API
        comm.Barrier()
        comm.Allreduce(MPI.IN_PLACE, send[:100])
        return obj

    obj, trace = recorder.trace_call(comm, body, capacity=1000)
    assert obj == {"from": left}
    assert np.all(got == left)
    if rank != 0:
        assert trace is None
        return
    assert trace.nranks == size
    for r in range(size):
        assert trace.count("MPI_Sendrecv", r) == 1
        # mpi4py's object sendrecv is an Isend, an Mprobe+Mrecv and a Wait
        assert trace.count("MPI_Isend", r) == 2
        assert trace.count("MPI_Mprobe", r) == trace.count("MPI_Mrecv", r) == 1
        assert trace.count("MPI_Irecv", r) == 1
        assert trace.count("MPI_Waitall", r) == 1
        assert trace.count("MPI_Barrier", r) == 1
        assert trace.count("MPI_Allreduce", r) == 1
        mine = trace.of_rank(r)
        sr = mine[mine["kind"] == KIND["MPI_Sendrecv"]]
        assert set(sr["peer"]) == {(r + 1) % size}
        assert set(sr["peer2"]) == {(r - 1) % size}
        isend = mine[(mine["kind"] == KIND["MPI_Isend"]) & (mine["tag"] == 8)][0]
        assert isend["peer"] == (r + 1) % size and isend["tag"] == 8 and isend["bytes"] == 8 * (100 + r)
        irecv = mine[mine["kind"] == KIND["MPI_Irecv"]][0]
        assert irecv["peer2"] == (r - 1) % size and irecv["bytes"] == 8 * (100 + (r - 1) % size)
        assert irecv["t_done"] >= irecv["t1"]
        allreduce = mine[mine["kind"] == KIND["MPI_Allreduce"]][0]
        assert allreduce["bytes"] == 8 * 100
    messages = trace.messages()
    for tag in (7, 8):
        of_tag = messages[messages["tag"] == tag]
        assert len(of_tag) == size  # every send matched to exactly one receive
        for m in of_tag:
            assert m["dst"] == (m["src"] + 1) % size
            assert m["bytes"] == 8 * (100 + m["src"])
            assert m["t_recv"] >= m["t_send"]  # one host: one clock
    assert len(messages[messages["tag"] == 9]) == size
    matrix = trace.matrix("messages")
    for r in range(size):
        assert matrix[r, (r + 1) % size] >= 3
    assert matrix.sum() == 3 * size
    assert trace.matrix("bytes")[0, 1 % size] >= 2 * 8 * 100
    spent = trace.time_per_kind()
    assert set(spent) == set(range(size)) and all(v["compute"] >= 0 for v in spent.values())
    chrome = trace.to_chrome()
    assert sum(e["ph"] == "X" for e in chrome["traceEvents"]) == len(trace)
    assert sum(e["ph"] == "s" for e in chrome["traceEvents"]) == len(messages)


def test_binomial_cascade_rounds_in_order(comm):
    from mpiworkbench.backends.mpi4py.loops import python_loop
    from mpiworkbench.bench.buffers import Buffers

    loop = python_loop("buf", "bcast_binomial", comm, mode="osu")
    b = Buffers.for_size(64)
    _, trace = recorder.trace_call(comm, loop, b, 64, 1, 0)
    if comm.rank != 0:
        return
    messages = trace.messages()
    messages = messages[messages["tag"] == 4]
    size = comm.size
    assert sorted(messages["dst"].tolist()) == list(range(1, size))  # every rank got it once
    for m in messages:
        step = 1 << (int(m["dst"]).bit_length() - 1)  # round k sends from r to r + 2^k
        assert m["src"] == m["dst"] - step
    received_at = {int(m["dst"]): float(m["t_recv"]) for m in messages}
    received_at[0] = 0.0
    for m in messages:  # a rank forwards only after it has received, round after round
        assert m["t_send"] >= received_at[int(m["src"])] - 1e-9
    from_root = messages[messages["src"] == 0]
    assert from_root["dst"].tolist() == sorted(from_root["dst"].tolist())  # round 0 first


def test_numba_mpi_calls_are_traced(comm):
    numba_mpi = pytest.importorskip("numba_mpi")
    from mpi4py import MPI

    assert library.numba_mpi_traced() is True
    data = np.arange(5, dtype=np.float64)

    def body():
        numba_mpi.barrier()
        if MPI.COMM_WORLD.size > 1:
            if MPI.COMM_WORLD.rank == 0:
                numba_mpi.send(data, 1, 11)
            elif MPI.COMM_WORLD.rank == 1:
                numba_mpi.recv(data, 0, 11)

    _, trace = recorder.trace_call(comm, body, capacity=100)
    if comm.rank != 0:
        return
    for r in range(comm.size):
        assert trace.count("MPI_Barrier", r) == 1
    if comm.size > 1:
        m = trace.messages()
        assert [(int(x["src"]), int(x["dst"]), int(x["tag"]), int(x["bytes"])) for x in m] == [(0, 1, 11, 40)]


def test_c_backend_calls_are_traced(comm):
    from mpiworkbench.backends import get_backend

    be = get_backend("c", comm)
    a = np.ones(3)

    def body():
        be.barrier()
        be.allreduce(a, "sum", out=np.empty_like(a))

    _, trace = recorder.trace_call(comm, body, capacity=100)
    if comm.rank == 0:
        for r in range(comm.size):
            assert trace.count("MPI_Barrier", r) == 1
            assert trace.count("MPI_Allreduce", r) == 1


def test_clock_offsets_on_one_host(comm):
    recorder.start(16)
    _ = recorder.finish(comm, estimate_offsets=True)  # estimate even though one host
    offsets = recorder.clock_offsets(comm)
    assert len(offsets) == comm.size and offsets[0] == 0.0
    assert all(np.isfinite(offsets))


def test_events_report_gives_what_a_reader_on_another_host_needs(comm):
    import json
    import time

    from mpiworkbench.trace import hang

    pid = os.getpid()
    assert hang.events_report(pid) is None, "nothing to publish while no trace records"
    recorder.start(1000)
    comm.allreduce(comm.rank)
    comm.Barrier()
    data = hang.events_report(pid)
    mine = recorder.stop()
    from mpi4py import MPI

    assert data is not None and data["rank"] == MPI.COMM_WORLD.rank
    assert not data["open_last"], "between calls: no unfinished call appended"
    assert len(data["events"]) == len(mine) >= 2
    assert np.array_equal(data["events"]["kind"], mine["kind"])
    # the events' clock and the wall clock read at one moment: times convert to the wall clock
    assert abs((data["monotonic"] - time.clock_gettime(time.CLOCK_MONOTONIC))) < 60
    assert abs(data["wall"] - time.time()) < 60
    json.dumps({k: v for k, v in data.items() if k != "events"})  # the rest travels as plain values
