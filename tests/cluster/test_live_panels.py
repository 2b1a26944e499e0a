"""The live solver panels on a real 2-engine cluster (issue 12): a frame is bounded by
``wb.timeout`` like ``%%px``, and the panel shows the rank-by-rank report; Play's frames
follow the solver."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")


def test_a_frame_that_outlasts_the_timeout_shows_the_rank_report(wb):
    w = wb.wave(mesh=65)
    panel = w.panel(w)
    limit = wb.timeout
    wb.timeout = 0.05  # far less than 2000 steps of a 65³ mesh take
    try:
        assert panel.request_steps(2000)
        panel.wait(timeout=600)
    finally:
        wb.timeout = limit
    assert "step failed" in panel.status.value and "ExecutionTimeout" in panel.status.value
    assert "rank 0 (engine" in panel.status.value and "still running" in panel.status.value
    assert not any(b.disabled for b in panel.buttons.values())
    w.reset()  # queued behind the 2000 steps: waits for them (wb.timeout is generous again)
    assert w.steps == 0
    w.close()


def test_play_frames_follow_the_solver(wb):
    h = wb.heat(shape=(32, 40), tol=1e-12)
    panel = h.panel(h)
    assert panel.play_frames(lambda: False, max_frames=5) == 5
    assert panel.stats.count == 5 and h.steps == sum(int(f["steps"]) for f in panel.stats.recent)
    assert "frames 5" in panel.frame_stats.value and "frames/s" in panel.frame_stats.value
    assert bytes(panel.field_image.value).startswith(b"\x89PNG") and f"steps = {h.steps}" in panel.status.value
    h.close()


def test_frames_bring_back_pictures_reduced_on_the_ranks(wb):
    import numpy as np

    from mpiworkbench.solvers.picture import reduce_picture

    c = wb.cg(mesh=301, tol=1e-300, maxiter=10**6)
    try:
        frame = c.frame(5, resolution=40)
        exact = c.solution()  # the exact call stays: the whole iterate
        want = reduce_picture(exact, 40)
        assert frame.field.shape == (40, 40) and frame.nbytes == 40 * 40 * 8 and frame.picture.reduced
        np.testing.assert_allclose(frame.field, want.values, rtol=1e-13, atol=1e-16)
        assert (frame.picture.vmin, frame.picture.vmax) == (exact.min(), exact.max())
        assert c.frame(1, resolution=None).field.shape == (301, 301)  # the whole picture on request
        panel = c.panel(c)
        assert 50 < panel.resolution < 301  # the pixels its image is drawn at
        assert panel.play_frames(lambda: False, max_frames=3) == 3
        assert all(f["bytes"] <= panel.resolution ** 2 * 8 for f in panel.stats.recent)
        assert "bin means" in panel.status.value
    finally:
        c.close()
    w = wb.wave(mesh=17)
    try:
        frame = w.frame(2, "y", 3)  # a small mesh: the exact plane, as before
        np.testing.assert_array_equal(frame.field, w.slice("y", 3))
        assert not frame.picture.reduced
    finally:
        w.close()
