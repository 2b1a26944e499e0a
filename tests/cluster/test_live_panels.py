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
