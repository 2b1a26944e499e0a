"""The trace view composes the plot functions: every tab drawn, zoom redraws, export writes JSON."""

from __future__ import annotations

import json

import pytest

from tests.unit.test_trace_model import _trace

pytest.importorskip("ipywidgets")


def test_trace_view_draws_zooms_and_exports(tmp_path):
    from mpiworkbench.widgets.trace import TraceView

    view = TraceView(_trace())
    assert view.timeline_image.value[:4] == b"\x89PNG" and view.matrix_image.value and view.kinds_image.value
    before = view.timeline_image.value
    view.zoom.value = (0.0, 0.7)
    assert view.timeline_image.value != before
    view.matrix_what.value = "messages"
    view.file.value = str(tmp_path / "t.json")
    view.export()
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    with pytest.raises(ValueError, match="no trace to show"):
        TraceView(None)
