"""Speedup analysis: medians, spread, speedup, efficiency, tables and the JSON round trip."""

import json

import pytest

from mpiworkbench.speedup import analysis
from mpiworkbench.speedup.analysis import SpeedupResult
def point(variant, nranks, times, size=100, oversubscribed=False, cores=2):
    return {
        "experiment": "inner",
        "variant": variant,
        "nranks": nranks,
        "size": size,
        "base_size": size,
        "times": list(times),
        "oversubscribed": oversubscribed,
        "placement": {"cores": cores, "oversubscribed": oversubscribed, "hosts": {}},
    }


def strong_result():
    r = SpeedupResult("inner")
    r.add(point("c", 1, [4.0, 3.9, 4.2]))
    r.add(point("c", 2, [2.1, 2.0, 2.05]))
    r.add(point("c", 4, [1.0, 1.1, 0.9], oversubscribed=True))
    return r


def test_summarise_median_quartiles_and_range():
    s = analysis.summarise([3.0, 1.0, 2.0, 10.0])
    assert s["median"] == 2.5
    assert s["min"] == 1.0 and s["max"] == 10.0
    assert s["q1"] <= s["median"] <= s["q3"]


def test_summarise_rejects_no_repetitions():
    with pytest.raises(ValueError, match="at least one timed repetition"):
        analysis.summarise([])


def test_strong_speedup_and_efficiency_use_one_rank_median():
    r = strong_result()
    s = {p["nranks"]: p for p in r.points}
    assert s[1]["speedup"] == 1.0
    assert s[2]["speedup"] == pytest.approx(4.0 / 2.05)
    assert s[4]["speedup"] == pytest.approx(4.0 / 1.0)
    assert s[4]["efficiency"] == pytest.approx(1.0)
    assert s[2]["speedup_low"] <= s[2]["speedup"] <= s[2]["speedup_high"]


def test_strong_speedup_without_one_rank_point_uses_smallest_count():
    r = SpeedupResult("inner")
    r.add(point("c", 2, [2.0]))
    r.add(point("c", 4, [1.0]))
    p4 = r.series()[("c", 100)][1]
    assert p4["reference_nranks"] == 2
    assert p4["speedup"] == pytest.approx(4.0)  # T(2) * 2 / T(4)
    assert p4["efficiency"] == pytest.approx(1.0)


def test_weak_scaling_efficiency_is_time_ratio():
    r = SpeedupResult("inner", scaling="weak")
    r.add(point("c", 1, [1.0], size=10))
    p = point("c", 2, [1.25], size=20)
    p["base_size"] = 10
    r.add(p)
    p2 = r.series()[("c", 10)][1]
    assert p2["efficiency"] == pytest.approx(0.8)
    assert p2["speedup"] == pytest.approx(1.6)


def test_series_are_separate_per_variant_and_size():
    r = strong_result()
    r.add(point("numpy", 1, [1.0]))
    r.add(point("numpy", 2, [0.4]))
    assert set(r.series()) == {("c", 100), ("numpy", 100)}
    assert r.series()[("numpy", 100)][1]["speedup"] == pytest.approx(2.5)


def test_json_round_trip_gives_same_numbers(tmp_path):
    r = strong_result()
    path = analysis.save(r, tmp_path / "out.json")
    data = json.loads(path.read_text())
    assert data["format"] == analysis.FORMAT_VERSION
    assert all("speedup" in p and "efficiency" in p for p in data["points"])
    back = analysis.load(path)
    assert back.label == "out"
    for a, b in zip(r.points, back.points):
        assert a["speedup"] == pytest.approx(b["speedup"])
        assert a["median"] == b["median"]


def test_load_missing_file_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="--json"):
        analysis.load(tmp_path / "nope.json")


def test_load_rejects_foreign_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="format"):
        analysis.load(path)


def test_table_marks_oversubscribed_rows_and_reference_as_na():
    text = analysis.format_table(strong_result(), "n")
    lines = text.splitlines()
    assert "N/A" in lines[1]
    assert lines[3].strip().startswith("4 *")
    assert "oversubscribed" in lines[-1] and "2 core" in lines[-1]
    html = analysis.format_html(strong_result(), "n")
    assert "(oversubscribed)" in html and html.count("<tr>") == 5


def test_busy_host_is_reported_only_when_load_exceeds_cores():
    r = strong_result()
    assert analysis.busy_note(r) == ""
    r.points[1]["load_average"] = 7.5
    assert "load average up to 7.5 on 2 core(s)" in analysis.busy_note(r)
    assert "busy host" in analysis.format_table(r) and "busy host" in analysis.format_html(r)


def test_rank_order_fills_a_node_first_or_spreads_over_the_nodes():
    from mpiworkbench.core.machine import PLACEMENTS, rank_order

    # a block distribution (Slurm's default) and a cyclic one, over two nodes
    block = ["n1", "n1", "n2", "n2"]
    cyclic = ["n1", "n2", "n1", "n2"]
    assert rank_order(block, "packed") == [0, 1, 2, 3]
    assert rank_order(block, "spread") == [0, 2, 1, 3]
    assert rank_order(cyclic, "packed") == [0, 2, 1, 3]
    assert rank_order(cyclic, "spread") == [0, 1, 2, 3]
    # uneven nodes: the spread order takes what is left of the larger one last
    assert rank_order(["a", "a", "a", "b"], "spread") == [0, 3, 1, 2]
    # one host: the same ranks either way, in rank order (the usual laptop case)
    for place in PLACEMENTS:
        assert rank_order(["h"] * 3, place) == [0, 1, 2]
        assert rank_order(block, place)[0] == 0, "rank 0 always takes part: it reports the point"
    with pytest.raises(ValueError, match="placement must be one of packed, spread; got 'scattered'"):
        rank_order(block, "scattered")


def placed_point(place, nranks, times, hosts):
    p = point("c", nranks, times)
    p["place"] = place
    p["placement"]["hosts"] = {h: {"cores": 2, "active_ranks": n, "resident_ranks": 2} for h, n in hosts.items()}
    return p


def test_placements_are_separate_curves_and_tables_say_how_many_nodes():
    r = SpeedupResult("inner")
    r.add(placed_point("packed", 1, [4.0], {"n1": 1, "n2": 0}))
    r.add(placed_point("packed", 2, [2.0], {"n1": 2, "n2": 0}))
    r.add(placed_point("spread", 1, [4.0], {"n1": 1, "n2": 0}))
    r.add(placed_point("spread", 2, [3.0], {"n1": 1, "n2": 1}))
    assert set(r.series()) == {("c", 100), ("c [spread]", 100)}
    spread = r.series()[("c [spread]", 100)]
    assert [analysis.nodes(p) for p in spread] == [1, 2]
    assert spread[1]["speedup"] == pytest.approx(4.0 / 3.0), "each curve has its own reference"
    table = analysis.format_table(r)
    assert "c [spread] size=100" in table and "nodes" in table.splitlines()[0]
    assert table.splitlines()[2].split()[-1] == "2", table  # the spread curve's 2-rank point: 2 nodes
    html = analysis.format_html(r)
    assert "<th>nodes</th>" in html and "<td>2</td>" in html
    # a result without placements (saved before they existed) reads as packed on one host
    old = strong_result()
    assert all(analysis.nodes(p) == 1 for p in old.points) and "nodes" not in analysis.format_table(old)
    assert set(old.series()) == {("c", 100)}


def test_inter_node_points_are_framed_in_the_figure():
    from mpiworkbench.plot.speedup import scaling_figure

    r = SpeedupResult("inner")
    r.add(placed_point("spread", 1, [4.0], {"n1": 1, "n2": 0}))
    r.add(placed_point("spread", 2, [3.0], {"n1": 1, "n2": 1}))
    fig = scaling_figure(r)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("framed markers: ranks on several nodes" in t for t in texts), texts
    framed = [line for ax in fig.axes for line in ax.lines if line.get_marker() == "s" and line.get_markersize() == 11]
    assert len(framed) == 3, "the 2-node point framed in each of the three panels"
