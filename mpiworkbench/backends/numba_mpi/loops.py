"""Timed loops of the ``numba-mpi`` backend: the whole loop, timer included, runs in ``@njit``.

numba-mpi talks to ``MPI_COMM_WORLD`` only and has no alltoall; those cases raise
:class:`~mpiworkbench.backends.base.NotSupportedError` with the reason instead of being
faked. Compilation is a one-off cost, paid on the first call of a loop (the harness makes
that call before anything is timed); compiled loops are kept per benchmark.

Every loop has one signature, ``(s, r, sf, rf, nbytes, iters, warmup, window, per_call)``
(uint8 and float64 views of the send and receive buffers); a collective's loop wraps one
call, ``op(s, r, sf, rf, nbytes, rank, size)``, taken from :func:`_calls`.
"""

from __future__ import annotations

from typing import Any, Callable

from mpiworkbench.backends.base import Loop, NotSupportedError
from mpiworkbench.backends.numba_mpi import NAME, UNSUPPORTED, check_world, fit_status_buffers

_cache: dict[str, Callable] = {}


def loop_in_njit(benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
    """The ``@njit`` loop of *benchmark* (arguments as :meth:`mpiworkbench.backends.Backend.make_loop`)."""
    if benchmark in UNSUPPORTED:
        raise NotSupportedError(NAME, UNSUPPORTED[benchmark])
    if benchmark == "ring":
        raise NotSupportedError(NAME, "persistent requests: numba-mpi 1.3 has no MPI_Send_init/MPI_Recv_init")
    check_world(comm, same_ranks=True)
    fit_status_buffers()
    kernel = _kernel(benchmark)
    per_call = 1 if mode == "osu" else 0

    def loop(b: Any, nbytes: int, iters: int, warmup: int) -> float:
        return kernel(b.send, b.recv, b.send_f64, b.recv_f64, nbytes, iters, warmup, window, per_call)

    return loop


def _kernel(name: str) -> Callable:
    if name not in _cache:
        builders = {"pingpong": _pingpong, "bw": lambda: _window(False), "bibw": lambda: _window(True)}
        _cache[name] = builders[name]() if name in builders else _collective(name)
    return _cache[name]


def _pingpong() -> Callable:
    import numba
    import numba_mpi as nm

    @numba.njit
    def pingpong(s, r, sf, rf, nbytes, iters, warmup, window, per_call):
        rank = nm.rank()
        sv, rv = s[:nbytes], r[:nbytes]
        t0 = 0.0
        nm.barrier()
        if rank > 1:
            return 0.0
        for i in range(iters + warmup):
            if i == warmup:
                t0 = nm.wtime()
            if rank == 0:
                nm.send(sv, 1, 1)
                nm.recv(rv, 1, 1)
            else:
                nm.recv(rv, 0, 1)
                nm.send(sv, 0, 1)
        return nm.wtime() - t0

    return pingpong


def _window(bidir: bool) -> Callable:
    import numba
    import numba_mpi as nm
    import numpy as np

    @numba.njit
    def window_loop(s, r, sf, rf, nbytes, iters, warmup, window, per_call):
        rank = nm.rank()
        sv, rv, one = s[:nbytes], r[:nbytes], r[:1]
        reqs = np.empty(2 * window, dtype=nm.RequestType)
        t0 = 0.0
        nm.barrier()
        if rank > 1:
            return 0.0
        peer = 1 - rank
        for i in range(iters + warmup):
            if i == warmup:
                t0 = nm.wtime()
            if bidir:
                for w in range(window):
                    reqs[w] = nm.irecv(rv, peer, 10)[1][0]
                for w in range(window):
                    reqs[window + w] = nm.isend(sv, peer, 10)[1][0]
                nm.waitall(reqs)
            elif rank == 0:
                for w in range(window):
                    reqs[w] = nm.isend(sv, 1, 10)[1][0]
                nm.waitall(reqs[:window])
                nm.recv(one, 1, 11)
            else:
                for w in range(window):
                    reqs[w] = nm.irecv(rv, 0, 10)[1][0]
                nm.waitall(reqs[:window])
                nm.send(one, 0, 11)
        return nm.wtime() - t0

    return window_loop


def _collective(name: str) -> Callable:
    import numba
    import numba_mpi as nm

    calls = _calls()
    if name not in calls:
        raise NotSupportedError(NAME, f"no loop for benchmark {name!r}")
    op = numba.njit(calls[name])

    @numba.njit
    def collective_loop(s, r, sf, rf, nbytes, iters, warmup, window, per_call):
        rank, size = nm.rank(), nm.size()
        total, t0 = 0.0, 0.0
        nm.barrier()
        for i in range(iters + warmup):
            if per_call == 1:
                t = nm.wtime()
                op(s, r, sf, rf, nbytes, rank, size)
                if i >= warmup:
                    total += nm.wtime() - t
                nm.barrier()
            else:
                if i == warmup:
                    t0 = nm.wtime()
                op(s, r, sf, rf, nbytes, rank, size)
        if per_call == 0:
            total = nm.wtime() - t0
        return total

    return collective_loop


def _calls() -> dict[str, Callable]:
    """Benchmark name → one call, ``op(s, r, sf, rf, nbytes, rank, size)`` (to be jitted)."""
    import numba_mpi as nm
    import numpy as np

    def bcast(s, r, sf, rf, nbytes, rank, size):
        nm.bcast(s[:nbytes], 0)

    def reduce(s, r, sf, rf, nbytes, rank, size):
        nm.reduce(sf[:nbytes // 8], rf[:nbytes // 8], nm.Operator.SUM, 0)

    def allreduce(s, r, sf, rf, nbytes, rank, size):
        nm.allreduce(sf[:nbytes // 8], rf[:nbytes // 8], nm.Operator.SUM)

    def gather(s, r, sf, rf, nbytes, rank, size):
        nm.gather(s[:nbytes], r[:nbytes * size], nbytes, 0)

    def scatter(s, r, sf, rf, nbytes, rank, size):
        nm.scatter(s[:nbytes * size], r[:nbytes], nbytes, 0)

    def allgather(s, r, sf, rf, nbytes, rank, size):
        nm.allgather(s[:nbytes], r[:nbytes * size], nbytes)

    def barrier(s, r, sf, rf, nbytes, rank, size):
        nm.barrier()

    def sendrecv(s, r, sf, rf, nbytes, rank, size):
        nm.sendrecv(s[:nbytes], (rank + 1) % size, r[:nbytes], (rank + size - 1) % size, 2, 2)

    def bcast_linear(s, r, sf, rf, nbytes, rank, size):
        if rank == 0:
            reqs = np.empty(max(size - 1, 1), dtype=nm.RequestType)
            for dest in range(1, size):
                reqs[dest - 1] = nm.isend(s[:nbytes], dest, 3)[1][0]
            if size > 1:
                nm.waitall(reqs[:size - 1])
        else:
            nm.recv(s[:nbytes], 0, 3)

    def bcast_binomial(s, r, sf, rf, nbytes, rank, size):
        step = 1
        while step < size:
            if rank < step:
                if rank + step < size:
                    nm.send(s[:nbytes], rank + step, 4)
            elif rank < 2 * step:
                nm.recv(s[:nbytes], rank - step, 4)
            step <<= 1

    return {f.__name__: f for f in (bcast, reduce, allreduce, gather, scatter, allgather, barrier,
                                    sendrecv, bcast_linear, bcast_binomial)}
