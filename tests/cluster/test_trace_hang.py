"""The hang report names, per rank, the MPI call it is blocked in, the peer, and the Python
line — and the likely cause — for the three classic hangs; ``wb.trace()`` and ``%%px --trace``
on a real cluster."""

from __future__ import annotations

import ipyparallel as ipp
import pytest

from mpiworkbench import ExecutionTimeout, Workbench
from mpiworkbench.client.calls import trace as client_trace

pytestmark = pytest.mark.cost(55)


@pytest.fixture(scope="module")
def wb():
    bench = Workbench(n=2, timeout=4.0, failure_grace=1.0)
    bench.start()
    yield bench
    bench.stop()


@pytest.fixture
def patient(wb):
    """*wb* with a generous timeout, for tests that trace work rather than make it hang: a
    solver's first creation on fresh engines compiles its kernels (seconds on a loaded machine,
    beyond the 4 s the hang tests wait)."""
    wb.timeout = 120.0
    yield wb
    wb.timeout = 4.0


@pytest.fixture(params=["this host", "another host"])
def seen_from(request, monkeypatch):
    """The hang report read as on the ranks' host (their slots and stacks read directly), and
    as from another host (what each rank's reporter thread published with the execution)."""
    if request.param == "another host":
        monkeypatch.setattr(client_trace.socket, "gethostname", lambda: "not-the-ranks-host")
    return request.param


def _hang(wb, code: str) -> ExecutionTimeout:
    with pytest.raises(ExecutionTimeout) as info:
        wb.execute(code)
    exc = info.value
    wb.restart()
    return exc


def _rank(exc, rank):
    return next(r for r in exc.ranks if r.rank == rank)


def test_rank_raising_before_a_barrier(wb, seen_from):
    exc = _hang(wb, (
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 0:\n"
        "    raise RuntimeError('rank 0 fails first')\n"
        "MPI.COMM_WORLD.Barrier()\n"
    ))
    assert exc.failed == [0] and exc.running == [1]
    one = _rank(exc, 1)
    assert one.inflight.call == "MPI_Barrier" and one.inflight.seconds > 0
    assert one.line is not None and one.line.split(" in ")[0].endswith(":4")  # the Barrier line
    assert any("rank 0 raised before the barrier" in c and "rank 1 waits in MPI_Barrier" in c for c in exc.causes)
    assert "Where each rank is" in str(exc) and "blocked in MPI_Barrier" in str(exc)


def test_send_send_deadlock_of_large_messages(wb, seen_from):
    exc = _hang(wb, (
        "import numpy as np\n"
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "big = np.zeros(1 << 21)\n"
        "comm.Send(big, dest=1 - comm.rank, tag=5)\n"
        "comm.Recv(big, source=1 - comm.rank, tag=5)\n"
    ))
    assert exc.running == [0, 1]
    for rank in (0, 1):
        rec = _rank(exc, rank).inflight
        assert (rec.call, rec.peer, rec.tag, rec.bytes) == ("MPI_Send", 1 - rank, 5, 8 << 21)
        assert _rank(exc, rank).line.split(" in ")[0].endswith(":5")
    assert any("send–send deadlock" in c and "ranks 0 and 1" in c for c in exc.causes)


@ipp.interactive  # sent by value: the engines cannot import this module
def _receive_from_the_other():
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    comm.Recv(np.zeros(4), source=1 - comm.rank, tag=9)


def test_a_relayed_call_is_reported_rank_by_rank_from_another_host_too(wb, seen_from):
    """``wb.run`` (and ``%%px``) go to rank 0, which hands the call to the others
    (``client/ranks/relay.py``): what each rank publishes about its copy reaches the notebook. It once
    did only for rank 0 — the copies carried rank 0's session, and a client takes in only what
    answers its own — so from another host rank 1 read "no in-flight record"."""
    with pytest.raises(ExecutionTimeout) as info:
        wb.run(_receive_from_the_other)
    exc = info.value
    wb.restart()
    for rank in (0, 1):
        rec = _rank(exc, rank).inflight
        assert rec is not None, str(exc)
        assert (rec.call, rec.peer, rec.tag) == ("MPI_Recv", 1 - rank, 9), str(exc)


def test_receive_with_a_wrong_tag(wb, seen_from):
    exc = _hang(wb, (
        "from mpi4py import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "if comm.rank == 0:\n"
        "    comm.send('hello', dest=1, tag=5)\n"
        "    reply = comm.recv(source=1, tag=6)\n"
        "else:\n"
        "    msg = comm.recv(source=0, tag=7)\n"
    ))
    one = _rank(exc, 1)
    assert (one.inflight.call, one.inflight.peer, one.inflight.tag) == ("MPI_Mprobe", 0, 7)
    assert one.line.split(" in ")[0].endswith(":7")
    assert _rank(exc, 0).line.split(" in ")[0].endswith(":5")
    assert any("rank 1 waits in MPI_Mprobe(source=0, tag=7)" in c and "never sent tag 7" in c
               and "it sent tag 5" in c for c in exc.causes)


def test_a_rank_computing_past_the_timeout_is_late_not_deadlocked(wb):
    # read on the ranks' host: a rank computing outside MPI publishes nothing to another host
    exc = _hang(wb, (
        "import time; from array import array\n"
        "from mpi4py import MPI\n"
        "if MPI.COMM_WORLD.rank == 1:\n"
        "    time.sleep(120)  # computing, long past the timeout\n"
        "MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, array('d', [1.0]))  # the buffer form: no Comm_dup first\n"
    ))
    assert exc.running == [0, 1]
    assert _rank(exc, 0).inflight.call == "MPI_Allreduce"
    one = _rank(exc, 1)
    assert one.inflight.call is None and one.inflight.outside >= 1.0, one.inflight
    assert one.line is not None and one.line.split(" in ")[0].endswith(":4")  # the sleep
    assert exc.causes and exc.causes[0].startswith("rank 1 has been computing for"), exc.causes
    assert "rank 0 waits for it in MPI_Allreduce" in exc.causes[0] and "late, not deadlocked" in exc.causes[0]
    assert not any("deadlock:" in c or "never entered" in c for c in exc.causes), exc.causes
    assert "not inside an MPI call (computing for" in str(exc)


def test_trace_block_gathers_a_trace(patient):
    wb = patient
    def ring():
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        return comm.sendrecv(comm.rank, (comm.rank + 1) % comm.size, 3, None, (comm.rank - 1) % comm.size, 3)

    with wb.trace() as t:
        assert wb.run(ring) == [1, 0]
    assert t.complete and t.trace.nranks == 2
    messages = t.trace.messages()
    assert sorted((int(m["src"]), int(m["dst"])) for m in messages if m["tag"] == 3) == [(0, 1), (1, 0)]


def test_trace_block_records_the_lines_its_wait_states_name(patient):
    wb = patient
    def late_send():
        import time

        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            time.sleep(0.3)
            comm.send("late", dest=1, tag=9)  # the late send
        else:
            comm.recv(source=0, tag=9)

    with wb.trace() as t:
        wb.run(late_send)
    assert t.trace.sites is not None
    late = [row for row in t.trace.wait_states().by_call_site() if row["pattern"] == "Late Sender"]
    assert late and late[0]["ranks"] == [1] and late[0]["cause_ranks"] == [0], late
    assert late[0]["cause_site"].endswith(" in late_send") and "test_trace_hang.py:" in late[0]["cause_site"]


def test_trace_up_to_a_timeout(wb):
    with pytest.raises(ExecutionTimeout):
        with wb.trace() as t:
            wb.execute(
                "from mpi4py import MPI\n"
                "MPI.COMM_WORLD.Barrier()\n"
                "if MPI.COMM_WORLD.rank == 0:\n"
                "    raise RuntimeError('no second barrier on rank 0')\n"
                "MPI.COMM_WORLD.Barrier()\n"
            )
    wb.restart()
    assert t.trace is not None and not t.complete
    assert t.trace.count("MPI_Barrier", 0) == 1
    assert t.trace.count("MPI_Barrier", 1) == 2  # the second one: still blocked, read from outside
    [blocked] = t.trace.unfinished
    assert t.trace.events["rank"][blocked] == 1


def test_px_trace_magic(wb):
    from IPython.core.interactiveshell import InteractiveShell

    from mpiworkbench.client.calls.magics import activate

    shell = InteractiveShell.instance()
    try:
        activate(wb)
        result = shell.run_cell("%%px --trace --no-stream\nMPI.COMM_WORLD.Barrier()")
        assert result.success, result.error_in_exec
        assert wb.last_trace is not None
        assert wb.last_trace.count("MPI_Barrier", 0) == wb.last_trace.count("MPI_Barrier", 1) == 1
    finally:
        InteractiveShell.clear_instance()


def test_wave_handle_trace_shows_the_halo_exchange(patient):
    wb = patient
    w = wb.wave(mesh=17, dims=(2, 1, 1))
    try:
        t = w.trace(steps=3)
    finally:
        w.close()
    for rank in range(2):
        assert t.count("MPI_Sendrecv", rank) == 6 * 3  # one per face direction per step
    halo = t.messages()
    assert len(halo) >= 2 * 3 and {(int(m["src"]), int(m["dst"])) for m in halo} == {(0, 1), (1, 0)}


def test_cg_handle_trace_counts_allreduces(patient):
    wb = patient
    c = wb.cg(mesh=17, variant="fused")
    try:
        t = c.trace(steps=2)
    finally:
        c.close()
    assert t.count("MPI_Allreduce", 0) == t.count("MPI_Allreduce", 1) >= 2


def test_heat_handle_trace(patient):
    wb = patient
    h = wb.heat(shape=(16, 12))
    try:
        t = h.trace(steps=2)
    finally:
        h.close()
    assert t.nranks == 2 and len(t.messages()) >= 2 * 2  # halo rows both ways, every step
    assert {(int(m["src"]), int(m["dst"])) for m in t.messages()} >= {(0, 1), (1, 0)}


def test_bench_panel_trace_toggle(patient):
    wb = patient
    from mpiworkbench.widgets.bench import BenchPanel

    panel = BenchPanel(wb, "pingpong", backends=["mpi4py-buf"], sizes="8:16")
    panel.trace_box.value = True
    panel.run()
    assert panel.doc is not None and panel.trace is not None
    assert panel.trace.count("MPI_Send", 0) > 0 and panel.trace.count("MPI_Recv", 1) > 0
    assert panel.trace_view.children  # the trace view under the plot
