"""Notebook 01's demos: deadlock watch, persistent requests, pickle vs buffer (1, 2, 3 ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.syntax.demos import deadlock, persistent, pickle_vs_buffer
COMM = MPI.COMM_WORLD


def test_small_standard_send_completes_large_synchronous_send_waits():
    small = deadlock.watch_head_to_head(COMM, 64, timeout=0.2)
    big = deadlock.watch_head_to_head(COMM, 64, timeout=0.05, synchronous=True)
    if COMM.rank ^ 1 < COMM.size:
        assert small["completed"] is True  # eager: returns without a matching receive
        assert big["completed"] is False  # Ssend always waits for the receive
    else:
        assert small["completed"] is None


def test_sendrecv_never_deadlocks():
    assert deadlock.fixed_with_sendrecv(COMM, 1 << 20)


def test_persistent_equals_isend_irecv():
    a = persistent.ring_with_persistent_requests(COMM, steps=4)
    b = persistent.ring_with_isend_irecv(COMM, steps=4)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, 100 * np.arange(4) + (COMM.rank - 1) % COMM.size)


def test_pingpong_needs_two_ranks_and_reports_ratios():
    if COMM.size < 2:
        with pytest.raises(ValueError, match="2 ranks"):
            pickle_vs_buffer.pingpong(COMM, "mpi4py-buf")
        return
    result = pickle_vs_buffer.compare(COMM, n=16, backends=("c", "mpi4py-buf", "mpi4py-obj"), repeats=5)
    if COMM.rank == 0:
        assert result["relative_to_c"]["c"] == 1.0 and all(t > 0 for t in result["seconds"].values())
    else:
        assert result is None
