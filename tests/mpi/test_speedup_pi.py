"""The numba-mpi π example (paper 004): both drivers give the same π; Fig. 1's measurement runs."""

import math

from mpi4py import MPI

from mpiworkbench.solvers.pi import RTOL, pi_mpi4py, pi_numba_mpi, pi_part, speedup_vs_calls_per_interval
def test_both_drivers_give_the_same_pi():
    a = pi_mpi4py(1001, 3)
    b = pi_numba_mpi(1001, 3)
    assert a == b  # same partial sums, same MPI reduction
    assert abs(a - math.pi) / math.pi < RTOL


def test_parts_sum_to_the_serial_midpoint_rule():
    size = MPI.COMM_WORLD.size
    parts = [pi_part(1001, r, size) for r in range(size)]
    assert math.isclose(sum(parts), pi_part(1001, 0, 1), rel_tol=1e-13)


def test_speedup_measurement_reports_every_ratio():
    out = speedup_vs_calls_per_interval(n_times=50, ratios=(1, 5), repeat=1)
    assert out["ratios"] == [1, 5] and out["ranks"] == MPI.COMM_WORLD.size
    assert all(t > 0 for t in out["mpi4py_s"] + out["numba_mpi_s"])
    assert out["speedup"] == [p / n for p, n in zip(out["mpi4py_s"], out["numba_mpi_s"])]
