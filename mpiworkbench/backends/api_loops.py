"""Timed loops written against the unified backends interface (:mod:`mpiworkbench.backends`).

The default :meth:`~mpiworkbench.backends.base.Backend.make_loop` of every backend, and
what ``api:<name>`` (e.g. ``api:mpi4py-buf``) runs: a backend timed *through* the unified
interface, so its wrapper overhead can be read off against the backend's own loop.
The loop is Python; the calls are ``be.send``/``be.recv``/… with the shared buffers.
"""

from __future__ import annotations

from typing import Any, Callable


def loop_over(be: Any, benchmark: str, mode: str = "osu", window: int = 64) -> Callable[[Any, int, int, int], float]:
    """The timed loop of *benchmark* through *be*, an instance of
    :class:`~mpiworkbench.backends.base.Backend` (arguments and result as ``Backend.make_loop``;
    this module imports nothing of the package, so ``base`` can hand off to it)."""
    per_call = mode == "osu"
    if benchmark == "ring":  # the unified interface has no persistent requests
        raise be._unsupported("persistent requests (Send_init/Recv_init): the unified interface has none")

    def loop(b: Any, nbytes: int, iters: int, warmup: int) -> float:
        return _run(be, benchmark, b, nbytes, iters, warmup, per_call, window)

    return loop


def _run(be: Any, name: str, b: Any, nbytes: int, iters: int, warmup: int, per_call: bool, window: int) -> float:
    rank, size, wtime = be.rank, be.size, be.wtime
    s, r = b.send[:nbytes], b.recv[:nbytes]
    t0, total = 0.0, 0.0
    if name == "pingpong":
        be.barrier()
        if rank > 1:
            return 0.0
        peer = 1 - rank
        for i in range(iters + warmup):
            if i == warmup:
                t0 = wtime()
            if rank == 0:
                be.send(s, peer, 1)
                be.recv(r, peer, 1)
            else:
                be.recv(r, peer, 1)
                be.send(s, peer, 1)
        return wtime() - t0
    if name in ("bw", "bibw"):
        be.barrier()
        if rank > 1:
            return 0.0
        peer, one = 1 - rank, b.recv[:1]
        for i in range(iters + warmup):
            if i == warmup:
                t0 = wtime()
            if name == "bibw":
                reqs = [be.irecv(r, peer, 10) for _ in range(window)]
                reqs += [be.isend(s, peer, 10) for _ in range(window)]
                be.waitall(reqs)
            elif rank == 0:
                be.waitall([be.isend(s, peer, 10) for _ in range(window)])
                be.recv(one, peer, 11)
            else:
                be.waitall([be.irecv(r, peer, 10) for _ in range(window)])
                be.send(one, peer, 11)
        return wtime() - t0
    call = _collective(be, name, b, nbytes)
    be.barrier()
    for i in range(iters + warmup):
        if per_call:
            t = wtime()
            call()
            if i >= warmup:
                total += wtime() - t
            be.barrier()
        else:
            if i == warmup:
                t0 = wtime()
            call()
    return total if per_call else wtime() - t0


def _collective(be: Any, name: str, b: Any, nbytes: int) -> Callable[[], object]:
    rank, size = be.rank, be.size
    s, r = b.send[:nbytes], b.recv[:nbytes]
    blocks = len(b.send) >= nbytes * size  # one block per rank only where the benchmark needs it
    sp = b.send[:nbytes * size].reshape(size, nbytes) if blocks else None
    rp = b.recv[:nbytes * size].reshape(size, nbytes) if blocks else None
    count = nbytes // 8
    sf, rf = b.send_f64[:count], b.recv_f64[:count]
    right, left = (rank + 1) % size, (rank - 1) % size
    calls = {
        "bcast": lambda: be.bcast(s, 0),
        "reduce": lambda: be.reduce(sf, "sum", 0, out=rf),
        "allreduce": lambda: be.allreduce(sf, "sum", out=rf),
        "alltoall": lambda: be.alltoall(sp, out=rp),
        "gather": lambda: be.gather(s, 0, out=rp),
        "scatter": lambda: be.scatter(sp, 0, out=r),
        "allgather": lambda: be.allgather(s, out=rp),
        "barrier": be.barrier,
        "sendrecv": lambda: be.sendrecv(s, right, out=r, source=left, sendtag=2, recvtag=2),
        "bcast_linear": (
            (lambda: be.waitall([be.isend(s, d, 3) for d in range(1, size)]))
            if rank == 0 else (lambda: be.recv(s, 0, 3))
        ),
        "bcast_binomial": lambda: _binomial(be, s, rank, size),
    }
    return calls[name]


def _binomial(be, buf, rank: int, size: int) -> None:
    step = 1
    while step < size:
        if rank < step:
            if rank + step < size:
                be.send(buf, rank + step, 4)
        elif rank < 2 * step:
            be.recv(buf, rank - step, 4)
        step <<= 1
