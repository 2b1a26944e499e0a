"""Pickle vs buffer, measured live: a ping-pong between ranks 0 and 1 per backend.

Times are noisy on a shared machine; compare the *ratios* measured in one run. The
backends come from :mod:`mpiworkbench.backends`, so the same loop times each of them.
"""

import numpy as np

from mpiworkbench.backends import get_backend, implemented_names


def pingpong(comm, backend: str, n: int = 1000, repeats: int = 200, warmup: int = 20) -> float | None:
    """Median seconds per round trip of an *n*-element float64 array between ranks 0 and 1.

    Each round trip is timed on its own and the median kept: on a shared, oversubscribed
    machine a descheduled rank stalls single round trips, which a mean would absorb.
    Rank 0 returns the time; other ranks return ``None`` (ranks >= 2 sit this out).
    """
    be = get_backend(backend, comm)
    if comm.size < 2:
        raise ValueError(f"a ping-pong needs 2 ranks; got {comm.size}")
    data, back = np.ones(n), np.empty(n)
    times = np.empty(repeats)
    comm.Barrier()
    for i in range(warmup + repeats):
        start = be.wtime()
        if comm.rank == 0:
            be.send(data, 1, tag=9)
            be.recv(back, 1, tag=9)
        elif comm.rank == 1:
            be.recv(back, 0, tag=9)
            be.send(back, 0, tag=9)
        if i >= warmup:
            times[i - warmup] = be.wtime() - start
    return float(np.median(times)) if comm.rank == 0 else None


def compare(comm, n: int = 1000, backends=None, repeats: int = 200) -> dict | None:
    """Median round-trip time per backend on rank 0, three interleaved rounds (best kept).

    *backends* defaults to every backend implemented here (the registry's order, C first).
    """
    if backends is None:
        backends = implemented_names()
    times = {b: [] for b in backends}
    for _ in range(3):
        for b in backends:
            t = pingpong(comm, b, n, repeats)
            if comm.rank == 0:
                times[b].append(t)
    if comm.rank != 0:
        return None
    best = {b: min(ts) for b, ts in times.items()}
    return {"n": n, "bytes": 8 * n, "seconds": best, "relative_to_c": {b: best[b] / best["c"] for b in best}}
