"""core.postmortem.last_failure reads the last exception IPython kept, without any engine."""

from __future__ import annotations

import sys

import numpy as np

from mpiworkbench.core.postmortem import last_failure


def _divide(total, parts):
    counts = np.arange(parts)
    return total / counts[0]


def test_last_failure_names_each_frame_its_line_and_its_bounded_locals(monkeypatch):
    monkeypatch.delattr(sys, "last_value", raising=False)
    monkeypatch.delattr(sys, "last_traceback", raising=False)
    assert last_failure() is None  # nothing raised yet

    try:
        with np.errstate(divide="raise"):
            _divide(7.0, 3)
    except FloatingPointError as exc:
        monkeypatch.setattr(sys, "last_value", exc, raising=False)
        monkeypatch.setattr(sys, "last_traceback", exc.__traceback__, raising=False)
    found = last_failure()
    assert found["exception"] == "FloatingPointError" and "divide" in found["message"]
    innermost = found["frames"][-1]
    assert innermost["function"] == "_divide" and innermost["source"] == "return total / counts[0]"
    assert innermost["locals"]["total"] == "7.0"
    assert innermost["locals"]["counts"].startswith("ndarray int64 (3,):")  # what it is, then its start
    assert found["frames"][0]["function"].startswith("test_last_failure")


def test_long_values_are_cut(monkeypatch):
    def fail(text):
        raise KeyError(text[:3])

    try:
        fail("x" * 10_000)
    except KeyError as exc:
        monkeypatch.setattr(sys, "last_value", exc, raising=False)
        monkeypatch.setattr(sys, "last_traceback", exc.__traceback__, raising=False)
    assert len(last_failure()["frames"][-1]["locals"]["text"]) < 200
