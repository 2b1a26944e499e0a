"""Timed loops of the mpi4py backends, written as plain Python loops.

``mpi4py-buf`` calls the upper-case buffer methods on the shared NumPy buffers;
``mpi4py-obj`` the lower-case methods, which pickle: the object sent is a NumPy array
viewing the send buffer — uint8 of the message size, float64 (size / 8 elements) for
``reduce``/``allreduce``, one uint8 block per rank as a list for ``scatter``/``alltoall`` —
and a receiver gets a new unpickled array each time. Point-to-point methods are bound to
locals and collectives wrapped in ``functools.partial`` before the loop (as
``mpi4py.bench`` does), so the loop's own overhead is one Python call per iteration (the
linear broadcast's root: one call that posts a send per rank and waits for them all).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from mpiworkbench.backends.base import Loop, NotSupportedError

FLAVOURS = ("buf", "obj")


def python_loop(flavour: str, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
    """The loop of *benchmark* for *flavour* ``"buf"`` or ``"obj"`` (other arguments as
    :meth:`mpiworkbench.backends.Backend.make_loop`)."""
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be 'buf' or 'obj'; got {flavour!r}")
    if benchmark == "pingpong":
        return partial(_pingpong, comm, flavour)
    if benchmark == "ring":
        if flavour == "obj":
            raise NotSupportedError("mpi4py-obj", "persistent requests: mpi4py's pickle-based lower-case "
                                    "methods have no send_init/recv_init (use mpi4py-buf's Send_init)")
        return partial(_ring, comm)
    if benchmark in ("bw", "bibw"):
        return partial(_window, comm, flavour, window, benchmark == "bibw")
    return partial(_timed_calls, comm, flavour, benchmark, mode == "osu")


def _pingpong(comm, flavour: str, b: Any, nbytes: int, iters: int, warmup: int) -> float:
    from mpi4py import MPI

    if flavour == "buf":
        s, r = b.send[:nbytes], b.recv[:nbytes]
        send, recv = comm.Send, comm.Recv
    else:  # the object is the send array; recv(None) unpickles a new one each time
        s, r = b.send[:nbytes], None
        send, recv = comm.send, comm.recv
    wtime = MPI.Wtime
    rank, t0 = comm.Get_rank(), 0.0
    comm.Barrier()
    if rank == 0:
        for i in range(iters + warmup):
            if i == warmup:
                t0 = wtime()
            send(s, 1, 1)
            recv(r, 1, 1)
    elif rank == 1:
        for i in range(iters + warmup):
            if i == warmup:
                t0 = wtime()
            recv(r, 0, 1)
            send(s, 0, 1)
    else:
        return 0.0
    return wtime() - t0


def _ring(comm, b: Any, nbytes: int, iters: int, warmup: int) -> float:
    """Report 003's ring: persistent requests made once; rank 0 starts its send and waits,
    then its receive; the others receive first, then pass the message on."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    send = comm.Send_init(b.send[:nbytes], (rank + 1) % size, 3)
    recv = comm.Recv_init(b.recv[:nbytes], (rank - 1) % size, 3)
    first, second = (send, recv) if rank == 0 else (recv, send)
    wtime, t0 = MPI.Wtime, 0.0
    comm.Barrier()
    for i in range(iters + warmup):
        if i == warmup:
            t0 = wtime()
        first.Start()
        first.Wait()
        second.Start()
        second.Wait()
    elapsed = wtime() - t0
    send.Free()
    recv.Free()
    return elapsed


def _window(comm, flavour: str, window: int, bidir: bool, b: Any, nbytes: int, iters: int,
            warmup: int) -> float:
    from mpi4py import MPI

    rank, t0, wtime = comm.Get_rank(), 0.0, MPI.Wtime
    comm.Barrier()
    if rank > 1:
        return 0.0
    peer = 1 - rank
    waitall = MPI.Request.Waitall if flavour == "buf" else MPI.Request.waitall
    if flavour == "buf":
        s, r, one = b.send[:nbytes], b.recv[:nbytes], b.recv[:1]
        isend, irecv, send, recv = comm.Isend, comm.Irecv, comm.Send, comm.Recv
        post_recv = lambda: irecv(r, peer, 10)  # noqa: E731
        post_send = lambda: isend(s, peer, 10)  # noqa: E731
        ack_send, ack_recv = (lambda: send(one, peer, 11)), (lambda: recv(one, peer, 11))
    else:
        obj = b.send[:nbytes]
        isend, irecv, send, recv = comm.isend, comm.irecv, comm.send, comm.recv
        # a receive buffer large enough for the pickled object (mpi4py's irecv needs one)
        rbufs = [bytearray(nbytes + 1024) for _ in range(window)]
        slots = iter(())

        def post_recv():
            nonlocal slots
            return irecv(next(slots), peer, 10)

        post_send = lambda: isend(obj, peer, 10)  # noqa: E731
        ack_send, ack_recv = (lambda: send(b"", peer, 11)), (lambda: recv(None, peer, 11))
    for i in range(iters + warmup):
        if i == warmup:
            t0 = wtime()
        if flavour == "obj":
            slots = iter(rbufs)
        if bidir:
            reqs = [post_recv() for _ in range(window)]
            reqs += [post_send() for _ in range(window)]
            waitall(reqs)
        elif rank == 0:
            waitall([post_send() for _ in range(window)])
            ack_recv()
        else:
            waitall([post_recv() for _ in range(window)])
            ack_send()
    return wtime() - t0


def _timed_calls(comm, flavour: str, name: str, per_call: bool, b: Any, nbytes: int, iters: int,
                 warmup: int) -> float:
    from mpi4py import MPI

    call = _collective_call(comm, flavour, name, b, nbytes)
    wtime, barrier, total, t0 = MPI.Wtime, comm.Barrier, 0.0, 0.0
    barrier()
    if per_call:
        for i in range(iters + warmup):
            t = wtime()
            call()
            if i >= warmup:
                total += wtime() - t
            barrier()
        return total
    for i in range(iters + warmup):
        if i == warmup:
            t0 = wtime()
        call()
    return wtime() - t0


def _collective_call(comm, flavour: str, name: str, b: Any, nbytes: int) -> Callable[[], object]:
    """One call of *name* (a collective, ``sendrecv``, a linear or binomial broadcast), ready to
    time; each branch gives the ``buf`` call, then the ``obj`` one. The object sent is the buffer
    call's send slice: the same memory, pickled."""
    from mpi4py import MPI

    rank, size, buf = comm.Get_rank(), comm.Get_size(), flavour == "buf"
    s, r = b.send[:nbytes], b.recv[:nbytes]
    sp, rp = b.send[:nbytes * size], b.recv[:nbytes * size]
    count = nbytes // 8
    sf, rf = b.send_f64[:count], b.recv_f64[:count]
    pieces = [b.send[k * nbytes:(k + 1) * nbytes] for k in range(size)]  # obj: one array per rank
    if name == "bcast":
        return partial(comm.Bcast, s, 0) if buf else partial(comm.bcast, s if rank == 0 else None, 0)
    if name == "reduce":
        return partial(comm.Reduce, sf, rf, MPI.SUM, 0) if buf else partial(comm.reduce, sf, MPI.SUM, 0)
    if name == "allreduce":
        return partial(comm.Allreduce, sf, rf, MPI.SUM) if buf else partial(comm.allreduce, sf, MPI.SUM)
    if name == "alltoall":
        return partial(comm.Alltoall, sp, rp) if buf else partial(comm.alltoall, pieces)
    if name == "gather":
        return partial(comm.Gather, s, rp, 0) if buf else partial(comm.gather, s, 0)
    if name == "scatter":
        return partial(comm.Scatter, sp, r, 0) if buf else partial(comm.scatter, pieces if rank == 0 else None, 0)
    if name == "allgather":
        return partial(comm.Allgather, s, rp) if buf else partial(comm.allgather, s)
    if name == "barrier":
        return comm.Barrier if buf else comm.barrier
    if name == "sendrecv":
        right, left = (rank + 1) % size, (rank - 1) % size
        return (partial(comm.Sendrecv, s, right, 2, r, left, 2) if buf
                else partial(comm.sendrecv, s, right, 2, None, left, 2))
    if name == "bcast_linear":
        return (_linear(rank, size, comm.Isend, MPI.Request.Waitall, s, partial(comm.Recv, s, 0, 3)) if buf
                else _linear(rank, size, comm.isend, MPI.Request.waitall, s, partial(comm.recv, None, 0, 3)))
    if name == "bcast_binomial":
        send, recv = ((comm.Send, comm.Recv) if buf else
                      (lambda o, d, t: comm.send(o, d, t), lambda o, src, t: comm.recv(None, src, t)))
        return partial(_binomial, send, recv, s, rank, size)
    raise ValueError(f"no mpi4py-{flavour} loop for benchmark {name!r}")


def _linear(rank: int, size: int, isend, waitall, buf, receive: Callable[[], object]) -> Callable[[], object]:
    """Report 003's linear broadcast: rank 0 posts one send per other rank and waits for all;
    every other rank makes the one receive *receive*."""
    if rank == 0:
        dests = range(1, size)
        return lambda: waitall([isend(buf, d, 3) for d in dests])
    return receive


def _binomial(send, recv, buf, rank: int, size: int) -> None:
    """Report 003's cascade: in round k, ranks < 2^k send to rank + 2^k."""
    step = 1
    while step < size:
        if rank < step:
            if rank + step < size:
                send(buf, rank + step, 4)
        elif rank < 2 * step:
            recv(buf, rank - step, 4)
        step <<= 1
