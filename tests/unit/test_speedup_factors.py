"""The POP factors of a traced speedup sweep: derived across the series, in the JSON, tabulated
and drawn as bars beside the curves (hand-made points, no MPI)."""

import json

import pytest
from matplotlib.container import BarContainer

from mpiworkbench.plot.speedup import factors_figure, scaling_figure
from mpiworkbench.speedup.analysis import TRACE_KEY, SpeedupResult, load, save, to_json
from mpiworkbench.speedup.factors import POP_FACTORS, format_pop, pop_series


def pop(n, useful, runtime, ideal):
    """The factors :func:`mpiworkbench.trace.efficiency.efficiency` gives these per-rank times."""
    top, mean = max(useful), sum(useful) / len(useful)
    return {"nranks": n, "runtime": runtime, "ideal_runtime": ideal, "useful": useful,
            "load_balance": mean / top, "communication": top / runtime, "serialisation": top / ideal,
            "transfer": ideal / runtime, "parallel": mean / runtime, "dropped": 0}


def traced(scaling="strong", with_trace=False):
    r = SpeedupResult("inner", scaling=scaling)
    for n, t, useful, runtime, ideal, over in [
        (1, 4.0, [1.0], 1.0, 1.0, False),
        (2, 2.1, [0.55, 0.45], 0.6, 0.58, False),
        (3, 1.6, [0.4, 0.35, 0.3], 0.5, 0.45, True),
    ]:
        record = {"experiment": "inner", "variant": "c", "nranks": n, "size": 10, "times": [t, t * 1.1],
                  "trace": True, "pop": pop(n, useful, runtime, ideal), "oversubscribed": over,
                  "placement": {"cores": 2, "oversubscribed": over, "hosts": {}}}
        if with_trace:
            record[TRACE_KEY] = object()  # rank 0's Trace, as run_point returns it
        r.add(record)
    return r


def test_scalability_and_global_efficiency_against_the_smallest_count():
    points = traced().points
    assert points[0]["pop"]["computation_scalability"] == pytest.approx(1.0)
    assert points[1]["pop"]["computation_scalability"] == pytest.approx(1.0 / 1.0)
    assert points[2]["pop"]["computation_scalability"] == pytest.approx(1.0 / 1.05)
    for p in points:
        f = p["pop"]
        assert f["load_balance"] * f["communication"] == pytest.approx(f["parallel"])
        assert f["serialisation"] * f["transfer"] == pytest.approx(f["communication"])
        assert f["global_efficiency"] == pytest.approx(f["parallel"] * f["computation_scalability"])


def test_weak_scaling_leaves_scalability_undefined():
    assert all(p["pop"]["computation_scalability"] is None for p in traced("weak").points)
    assert " - " in format_pop(traced("weak"))


def test_factors_survive_json_and_the_traces_stay_out(tmp_path):
    r = traced(with_trace=True)
    assert sorted(r.traces) == [0, 1, 2] and all(TRACE_KEY not in p for p in r.points)
    data = json.loads(to_json(r))
    assert data["params"] == {} and [p["pop"]["load_balance"] for p in data["points"]] == [
        p["pop"]["load_balance"] for p in r.points]
    again = load(save(r, tmp_path / "traced.json"))
    assert again.points[2]["pop"] == r.points[2]["pop"] and again.traces == {}


def test_table_names_every_factor_and_the_oversubscribed_point():
    text = format_pop(traced(), "n")
    assert all(label in text for _, label in POP_FACTORS)
    assert "3 *" in text and "oversubscribed" in text
    assert format_pop(SpeedupResult("inner")) == ""


def test_scaling_figure_has_the_factor_bars_beside_the_curves():
    fig = scaling_figure(traced(), "n", title="inner")
    assert len(fig.axes) == 4
    bars = fig.axes[3]
    groups = [c for c in bars.containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in groups] == [label for _, label in POP_FACTORS]
    assert all(len(c) == 3 for c in groups)  # one bar per rank count
    ticks = [t.get_text() for t in bars.get_xticklabels()]
    assert ticks == ["1", "2", "3\n(oversubscribed)"]


def test_untraced_figure_keeps_its_three_panels_and_factors_figure_needs_a_trace():
    untraced = SpeedupResult("inner")
    untraced.add({"experiment": "inner", "variant": "c", "nranks": 1, "size": 10, "times": [1.0]})
    assert len(scaling_figure(untraced).axes) == 3
    with pytest.raises(ValueError, match="trace=True"):
        factors_figure(untraced)
    assert len(factors_figure(traced()).axes) == len(pop_series(traced())) == 1
