"""Timed loops of the ``numba-mpi`` backend: the whole loop, timer included, runs in ``@njit``.

numba-mpi talks to ``MPI_COMM_WORLD`` only and has no alltoall; those cases raise
:class:`NotSupported` with the reason instead of being faked. Compilation is a one-off
cost: :func:`make_loop` compiles with a tiny call before anything is timed.
"""

from __future__ import annotations

from typing import Callable

from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.catalog import Benchmark
Loop = Callable[[Buffers, int, int, int], float]


class NotSupported(Exception):
    """This backend cannot run this benchmark (the message says why)."""


_cache: dict[tuple, Callable] = {}


def check_supported(bench: Benchmark, comm) -> None:
    from mpi4py import MPI

    if bench.name == "alltoall":
        raise NotSupported("numba-mpi 1.x has no alltoall")
    if MPI.Comm.Compare(comm, MPI.COMM_WORLD) not in (MPI.IDENT, MPI.CONGRUENT):
        raise NotSupported(
            "numba-mpi only communicates on MPI_COMM_WORLD; this run uses a sub-communicator "
            f"of {comm.Get_size()} rank(s)"
        )


def make_loop(bench: Benchmark, comm, mode: str = "osu", window: int = 64) -> Loop:
    """``loop(buffers, nbytes, iterations, warmup) -> timed seconds`` (compiled on first use)."""
    check_supported(bench, comm)
    kernel = _kernel(bench.name, mode == "osu")
    per_call = 1 if mode == "osu" else 0

    def loop(b: Buffers, nbytes: int, iters: int, warmup: int) -> float:
        return kernel(b.send, b.recv, b.send_f64, b.recv_f64, nbytes, iters, warmup, window, per_call)

    return loop


def _kernel(name: str, per_call: bool) -> Callable:
    key = (name,)
    if key not in _cache:
        _cache[key] = _build(name)
    return _cache[key]


def _build(name: str) -> Callable:
    import numba
    import numba_mpi as nm
    import numpy as np

    if name == "pingpong":

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

    if name in ("bw", "bibw"):
        bidir = name == "bibw"

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

    op = _op(name)

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


def _op(name: str) -> Callable:
    import numba
    import numba_mpi as nm
    import numpy as np

    if name == "bcast":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.bcast(s[:nbytes], 0)
    elif name == "reduce":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.reduce(sf[:nbytes // 8], rf[:nbytes // 8], nm.Operator.SUM, 0)
    elif name == "allreduce":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.allreduce(sf[:nbytes // 8], rf[:nbytes // 8], nm.Operator.SUM)
    elif name == "gather":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.gather(s[:nbytes], r[:nbytes * size], nbytes, 0)
    elif name == "scatter":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.scatter(s[:nbytes * size], r[:nbytes], nbytes, 0)
    elif name == "allgather":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.allgather(s[:nbytes], r[:nbytes * size], nbytes)
    elif name == "barrier":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.barrier()
    elif name == "sendrecv":
        def op(s, r, sf, rf, nbytes, rank, size):
            nm.sendrecv(s[:nbytes], (rank + 1) % size, r[:nbytes], (rank + size - 1) % size, 2, 2)
    elif name == "bcast_linear":
        def op(s, r, sf, rf, nbytes, rank, size):
            if rank == 0:
                reqs = np.empty(max(size - 1, 1), dtype=nm.RequestType)
                for dest in range(1, size):
                    reqs[dest - 1] = nm.isend(s[:nbytes], dest, 3)[1][0]
                if size > 1:
                    nm.waitall(reqs[:size - 1])
            else:
                nm.recv(s[:nbytes], 0, 3)
    elif name == "bcast_binomial":
        def op(s, r, sf, rf, nbytes, rank, size):
            step = 1
            while step < size:
                if rank < step:
                    if rank + step < size:
                        nm.send(s[:nbytes], rank + step, 4)
                elif rank < 2 * step:
                    nm.recv(s[:nbytes], rank - step, 4)
                step <<= 1
    else:
        raise NotSupported(f"numba-mpi has no loop for benchmark {name!r}")
    return numba.njit(op)
