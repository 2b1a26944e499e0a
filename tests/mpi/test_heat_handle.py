"""The heat handle and panel driven SPMD-style (each rank's "remote" calls run on its own
rank, see ``test_cg_handle``), at 1, 2 and 3 ranks: frames, Play to the steady state, reset."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.drivers.heat import HeatHandle
from mpiworkbench.solvers.heat import HeatSolver, row_range
from tests.mpi.test_cg_handle import SpmdWorkbench

comm = MPI.COMM_WORLD


def test_frames_bring_back_the_field_and_follow_the_history():
    h = HeatHandle(SpmdWorkbench(), shape=(12, 10), exchange="nonblocking", tol=1e-3)
    assert h.shape == (12, 10) and h.nranks == comm.size and h.steps == 0
    assert h.rows == [row_range(12, r, comm.size) for r in range(comm.size)]
    frame = h.frame(7)
    reference = HeatSolver((12, 10), comm=MPI.COMM_SELF, tol=1e-3)  # serial: the same field
    reference.step(7)
    assert frame.steps == 7 and h.steps == 7 and h.history_steps == [0, 7]
    np.testing.assert_array_equal(frame.field, reference.gather())
    assert h.deltas[-1] == pytest.approx(reference.delta) and h.errors[-1] == pytest.approx(reference.error())
    assert frame.compute_s > 0 and frame.exchange_s >= 0  # the slowest rank's, from the solver's timings
    h.step(3)
    assert h.steps == 10 and len(h.deltas) == len(h.errors) == 3
    assert len(h.timings()) == comm.size
    reference.close()
    h.close()


def test_the_panel_plays_until_the_steady_state_and_resets():
    pytest.importorskip("ipywidgets")
    from mpiworkbench.widgets.heat import HeatPanel

    h = HeatHandle(SpmdWorkbench(), shape=(8, 6), tol=1e-3)
    panel = HeatPanel(h)
    # every rank plays its own panel here: the steps per frame must not follow each rank's clock
    panel.stats.next_steps = lambda k, target_s: 20
    assert list(panel.buttons) == ["Step 10", "Step 100", "Step 1000"]
    assert bytes(panel.field_image.value).startswith(b"\x89PNG") and "steps = 0" in panel.status.value
    frames = panel.play_frames(should_stop=lambda: False)  # ends by itself at the steady state
    assert h.finished and h.deltas[-1] < 1e-3 and frames == panel.stats.count >= 1
    assert "steady state reached" in panel.status.value and f"frames {frames}" in panel.frame_stats.value
    assert panel.play_frames(should_stop=lambda: False) == 0  # nothing left to do
    panel.reset()
    assert h.steps == 0 and "steps = 0" in panel.status.value
    h.close()
