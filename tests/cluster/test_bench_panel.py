"""The micro-benchmark panel on a real 2-engine cluster: repeats, Stop, save and reload."""

from __future__ import annotations

import json


def test_panel_runs_with_repeats_and_says_its_thread_level(wb, tmp_path):
    panel = wb.bench("allreduce", backends=("c", "mpi4py-buf"), sizes="8,64")
    assert "mpi4py's default (multiple)" in panel.thread_info.value  # this cluster was started without one
    panel.cap.value = 0.05
    panel.repeats.value = 3
    doc = panel.run()
    assert [(r["backend"], r["size"]) for r in doc["rows"]] == [("c", 8), ("mpi4py-buf", 8), ("c", 64),
                                                               ("mpi4py-buf", 64)]
    assert all(r["repeats"] == 3 and len(r["t_us_repeats"]) == 3 for r in doc["rows"])
    assert "3 timed loops per size" in doc["method"]["repeats"]
    assert panel.progress.value == panel.progress.max == 2 and "thread level multiple" in panel.status.value
    assert bytes(panel.image.value[:4]) == b"\x89PNG"
    panel.file.value = str(tmp_path / "run.json")
    panel.save_button.click()
    assert json.loads((tmp_path / "run.json").read_text())["rows"] == doc["rows"]
    panel.load_button.click()
    assert len(panel.overlays) == 1


def test_panel_stop_keeps_the_sizes_that_finished(wb):
    panel = wb.bench("allreduce", backends=("c",), sizes="8,64,512")
    panel.cap.value = 0.05
    seen = []

    def stop_after_first(rows, progress):
        seen.append(progress["done"])
        panel.stop()

    panel._on_rows = stop_after_first  # what the Stop button does, pressed after the first size
    doc = panel.run()
    assert seen == [1] and [r["size"] for r in doc["rows"]] == [8] and doc["complete"] is False
