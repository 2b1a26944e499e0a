"""Wait states of known injected delays, traced under the interposer: a send started late is Late
Sender on the receiver at the send's line (blocking, Irecv + Wait, persistent), an Ssend posted
before its receive is Late Receiver, a late rank before an Allreduce is Wait at N×N on every
other rank, and a run without delays hardly waits.

The MPI tier runs with the interposer preloaded (``make test-mpi``).
"""

from __future__ import annotations

import inspect
import time

import numpy as np
import pytest

from mpiworkbench.trace import recorder
from mpiworkbench.trace.waits import wait_states

pytestmark = pytest.mark.usefixtures("interposer")  # tests/mpi/conftest.py

#: The injected delay (seconds).
D = 0.2


def now() -> float:
    """The ranks' shared clock (one host: CLOCK_MONOTONIC, the interposer's too): how late a call
    really began is measured beside the trace, so a loaded machine's longer sleeps are known."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def tolerance(expected: float) -> float:
    """±10 % or ±2 ms, whichever is larger."""
    return max(0.1 * expected, 0.002)


@pytest.fixture
def comm():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD.Dup()
    yield comm
    comm.Free()


def _line_of(func, text: str) -> str:
    """``file:line`` of the line of *func* that contains *text*."""
    lines, first = inspect.getsourcelines(func)
    for i, line in enumerate(lines):
        if text in line:
            return f"{inspect.getsourcefile(func)}:{first + i}"
    raise AssertionError(f"{text!r} not in {func.__name__}")


def _run(comm, body, began: dict, capacity: int = 1000):
    """Collective: *body* traced with its lines; the trace (rank 0, ``None`` elsewhere) and every
    rank's *began* times merged."""
    _, trace = recorder.trace_call(comm, body, capacity=capacity, lines=True)
    return trace, {k: v for part in comm.allgather(began) for k, v in part.items()}


def _late_send(comm, how: str):
    """Rank 0 sends to the last rank D seconds after the receive is posted."""
    buf = np.zeros(8)
    last = comm.size - 1
    began = {}

    def body():
        comm.Barrier()
        if comm.rank == 0:
            time.sleep(D)
            began["send"] = now()
            comm.Send(buf, dest=last, tag=5)  # the late send
        elif comm.rank == last:
            began["receive"] = now()
            if how == "recv":
                comm.Recv(buf, source=0, tag=5)
            elif how == "irecv":
                req = comm.Irecv(buf, source=0, tag=5)
                req.Wait()
            else:
                req = comm.Recv_init(buf, source=0, tag=5)
                req.Start()
                req.Wait()
                req.Free()
        comm.Barrier()

    trace, times = _run(comm, body, began)
    return trace, _line_of(body, "# the late send"), times["send"] - times["receive"]


@pytest.mark.mpi_min(2)
@pytest.mark.parametrize("how", ["recv", "irecv", "persistent"])
def test_a_late_send_is_late_sender_on_the_receiver_at_the_send_line(comm, how):
    trace, send_line, lateness = _late_send(comm, how)
    if comm.rank != 0:
        return
    last = comm.size - 1
    assert lateness > D / 2  # the injected delay, less how much later the other rank left the Barrier
    waits = wait_states(trace, trace.sites)
    late = waits.of("Late Sender", rank=last)
    assert late["seconds"].sum() == pytest.approx(lateness, abs=tolerance(lateness)), waits.text()
    assert set(late["cause_rank"].tolist()) == {0}
    biggest = late[np.argmax(late["seconds"])]
    assert waits.site(int(biggest["cause_site"])).startswith(send_line + " "), (waits.site(int(biggest["cause_site"])), send_line)
    expected_call = {"recv": "MPI_Recv", "irecv": "MPI_Wait", "persistent": "MPI_Wait"}[how]
    assert [row["call"] for row in waits.by_call_site() if row["pattern"] == "Late Sender"][0] == expected_call
    assert waits.seconds("Late Sender", rank=0) < tolerance(D)


@pytest.mark.mpi_min(2)
def test_an_ssend_posted_before_its_receive_is_late_receiver(comm):
    buf = np.zeros(8)
    last = comm.size - 1
    began = {}

    def body():
        comm.Barrier()
        if comm.rank == 0:
            began["send"] = now()
            comm.Ssend(buf, dest=last, tag=6)
        elif comm.rank == last:
            time.sleep(D)
            began["receive"] = now()
            comm.Recv(buf, source=0, tag=6)
        comm.Barrier()

    trace, times = _run(comm, body, began)
    if comm.rank != 0:
        return
    lateness = times["receive"] - times["send"]
    assert lateness > D / 2  # the injected delay, less how much later the other rank left the Barrier
    waits = wait_states(trace, trace.sites)
    late = waits.of("Late Receiver", rank=0)
    assert late["seconds"].sum() == pytest.approx(lateness, abs=tolerance(lateness)), waits.text()
    assert set(late["cause_rank"].tolist()) == {last}
    assert waits.site(int(late[0]["site"])).startswith(_line_of(body, "comm.Ssend") + " ")


@pytest.mark.mpi_min(2)
def test_a_late_rank_before_an_allreduce_is_wait_at_nxn_on_every_other_rank(comm):
    from mpi4py import MPI

    late_rank = comm.size - 1
    value = np.ones(4)

    began = {}

    def body():
        comm.Barrier()
        if comm.rank == late_rank:
            time.sleep(D)
        began[comm.rank] = now()
        comm.Allreduce(MPI.IN_PLACE, value)

    trace, times = _run(comm, body, began)
    if comm.rank != 0:
        return
    waits = wait_states(trace, trace.sites)
    for rank in range(comm.size):
        got = waits.seconds("Wait at N×N", rank=rank)
        if rank == late_rank:
            assert got < tolerance(D), waits.text()
        else:
            lateness = times[late_rank] - times[rank]
            assert lateness > D / 2  # the injected delay, less how much later the other rank left the Barrier
            assert got == pytest.approx(lateness, abs=tolerance(lateness)), waits.text()
            assert set(waits.of("Wait at N×N", rank=rank)["cause_rank"].tolist()) == {late_rank}


def test_a_run_without_delays_hardly_waits(comm):
    from mpi4py import MPI

    rank, size = comm.rank, comm.size
    right, left = (rank + 1) % size, (rank - 1) % size
    out, got = np.zeros(1000), np.zeros(1000)
    total = np.zeros(1)

    def body():
        for _ in range(8):
            # the same work on every rank (sleeping: three ranks share two cores, so computing
            # ranks would take turns and wait for each other; long enough that a rank's late
            # wake-up, while the others busy-poll the cores, stays a small part of it), then a
            # little communication
            time.sleep(0.15)
            comm.Sendrecv(out, right, 3, got, left, 3)
            comm.Allreduce(MPI.IN_PLACE, total)

    comm.Barrier()
    trace, _ = _run(comm, body, {}, capacity=10_000)
    if rank != 0:
        return
    waits = wait_states(trace, trace.sites)
    assert waits.fraction() < 0.05, waits.text()
