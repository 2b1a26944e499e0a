"""The numba-mpi paper's π example (paper 004, Listings 1-4, Fig. 1), engine-side.

π = ∫₀¹ 4/(1+x²) dx by the midpoint rule on ``n_intervals`` intervals; rank ``r`` of
``p`` sums intervals ``r, r+p, r+2p, …`` and an allreduce adds the parts. To make the
communication frequent, the whole computation is repeated ``n_times`` times, one
allreduce each. Two drivers share the same JIT-compiled partial sum:

* :func:`pi_mpi4py` — a Python loop: each repetition leaves the compiled code to call
  ``comm.Allreduce`` (the "round trip" between JIT code and the interpreter);
* :func:`pi_numba_mpi` — the loop *and* the allreduce inside one ``@numba.njit``
  function, through numba-mpi (which only knows ``COMM_WORLD``).

:func:`speedup_vs_calls_per_interval` measures both for a range of
``n_times / n_intervals`` ratios — the paper's Fig. 1.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from mpiworkbench.backends.numba_mpi import fit_status_buffers
from mpiworkbench.core import mpi
#: Relative tolerance both drivers check their π against.
RTOL = 1e-3


@numba.njit(cache=False)
def pi_part(n_intervals: int, rank: int, size: int) -> float:
    """This rank's share of the midpoint sum for π (compiled by numba)."""
    h = 1.0 / n_intervals
    acc = 0.0
    for i in range(rank, n_intervals, size):
        x = h * (i + 0.5)
        acc += 4.0 / (1.0 + x * x)
    return h * acc


def pi_mpi4py(n_intervals: int, n_times: int, comm=None) -> float:
    """π with mpi4py: the allreduce is called from Python after every compiled partial sum."""
    comm = mpi.resolve_comm(comm)
    MPI = mpi.MPI()
    part = np.zeros(1)
    total = np.zeros(1)
    for _ in range(n_times):
        part[0] = pi_part(n_intervals, comm.rank, comm.size)
        comm.Allreduce(part, total, op=MPI.SUM)
    return float(total[0])


def _make_pi_numba_mpi():
    import numba_mpi

    fit_status_buffers()

    @numba.njit
    def pi_numba_mpi(n_intervals: int, n_times: int) -> float:
        part = np.zeros(1)
        total = np.zeros(1)
        for _ in range(n_times):
            part[0] = pi_part(n_intervals, numba_mpi.rank(), numba_mpi.size())
            numba_mpi.allreduce(part, total, numba_mpi.Operator.SUM)
        return total[0]

    return pi_numba_mpi


_pi_numba_mpi = None


def pi_numba_mpi(n_intervals: int, n_times: int) -> float:
    """π with numba-mpi: loop and allreduce inside one JIT-compiled function (COMM_WORLD only)."""
    global _pi_numba_mpi
    if _pi_numba_mpi is None:
        _pi_numba_mpi = _make_pi_numba_mpi()
    return float(_pi_numba_mpi(n_intervals, n_times))


def _best_time(func, repeat: int, comm) -> float:
    """Minimum over *repeat* runs of the slowest rank's time (the paper takes the minimum)."""
    MPI = mpi.MPI()
    best = math.inf
    for _ in range(repeat):
        comm.Barrier()
        t0 = MPI.Wtime()
        value = func()
        elapsed = comm.allreduce(MPI.Wtime() - t0, op=MPI.MAX)
        if abs(value - math.pi) / math.pi > RTOL:
            raise RuntimeError(f"π came out as {value!r}, not within {RTOL} of {math.pi}")
        best = min(best, elapsed)
    return best


def speedup_vs_calls_per_interval(n_times: int = 2000, ratios: tuple[int, ...] = (1, 2, 4, 6, 8, 10), repeat: int = 5) -> dict:
    """Collective over ``COMM_WORLD``: time both drivers for ``n_intervals = n_times // ratio``.

    Returns (same on every rank) the ratios, both best times and the speedup
    ``t_mpi4py / t_numba_mpi``, plus the one-off JIT compile time of the numba-mpi driver.
    """
    comm = mpi.world()
    t0 = time.perf_counter()
    pi_numba_mpi(max(1, n_times), 1)  # compile outside every timed region
    pi_part(10, 0, 1)
    compile_s = comm.allreduce(time.perf_counter() - t0, op=mpi.MPI().MAX)
    out = {"n_times": n_times, "ratios": list(ratios), "mpi4py_s": [], "numba_mpi_s": [], "speedup": [],
           "ranks": comm.size, "compile_s": compile_s}
    for ratio in ratios:
        n_intervals = max(comm.size, n_times // ratio)
        t_py = _best_time(lambda: pi_mpi4py(n_intervals, n_times, comm), repeat, comm)
        t_nb = _best_time(lambda: pi_numba_mpi(n_intervals, n_times), repeat, comm)
        out["mpi4py_s"].append(t_py)
        out["numba_mpi_s"].append(t_nb)
        out["speedup"].append(t_py / t_nb)
    return out
