"""Planning speedup points: defaults, weak scaling sizes and input validation."""

import pytest

from mpiworkbench.speedup import experiments
from mpiworkbench.speedup.plan import SpeedupSpec, parse_int_list, plan_points, run_experiment
def test_every_experiment_named_in_the_issue_is_registered():
    assert set(experiments.names()) >= {"inner", "wave", "cg", "bench"}
    for exp in experiments.EXPERIMENTS.values():
        assert set(exp.default_variants) <= set(exp.variants)
        assert all(s >= exp.min_size for s in exp.default_sizes + exp.small_sizes)


def test_parse_int_list_accepts_lists_ranges_and_powers():
    assert parse_int_list("1,2,4", "--np") == [1, 2, 4]
    assert parse_int_list("1-3", "--np") == [1, 2, 3]
    assert parse_int_list("2**18", "--n") == [262144]
    with pytest.raises(ValueError, match="--np must be integers"):
        parse_int_list("1,two", "--np")


def test_plan_has_one_point_per_size_variant_and_rank_count():
    pts = plan_points(SpeedupSpec("inner", nranks=[2, 1, 2], sizes=[1000, 2000], variants=["c", "numpy"]))
    assert len(pts) == 2 * 2 * 2
    assert [p["nranks"] for p in pts[:2]] == [1, 2]
    assert pts[0]["params"] == {"loops": experiments.get("inner").param("loops").default}


def test_each_placement_is_planned_for_every_rank_count():
    pts = plan_points(SpeedupSpec("inner", nranks=[1, 2], sizes=[1000], variants=["c"],
                                  placements=["spread", "packed", "spread"]))
    assert [(p["place"], p["nranks"]) for p in pts] == [("spread", 1), ("spread", 2), ("packed", 1), ("packed", 2)]
    assert {p["place"] for p in plan_points(SpeedupSpec("inner", nranks=[1], sizes=[1000]))} == {"packed"}


def test_small_mode_uses_small_defaults(monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    spec = SpeedupSpec("inner", nranks=[1]).resolved()
    exp = experiments.get("inner")
    assert spec.sizes == list(exp.small_sizes)
    assert spec.params["loops"] == exp.param("loops").small_default


@pytest.mark.parametrize(
    ("name", "size", "nranks", "expected"),
    [("inner", 1000, 4, 4000), ("wave", 65, 8, 129), ("cg", 63, 4, 127), ("wave", 33, 1, 33)],
)
def test_weak_sizes_keep_work_per_rank(name, size, nranks, expected):
    assert experiments.get(name).weak_size(size, nranks) == expected


def test_weak_plan_grows_size_but_keeps_base_size():
    pts = plan_points(SpeedupSpec("wave", nranks=[1, 8], sizes=[33], scaling="weak"))
    assert [(p["size"], p["base_size"]) for p in pts] == [(33, 33), (65, 33)]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"experiment": "fft"}, "unknown speedup experiment 'fft'"),
        ({"nranks": [0, 1]}, "rank counts must be at least 1"),
        ({"variants": ["fortran"]}, "no variant 'fortran'"),
        ({"repeats": 0}, "repetitions must be at least 1"),
        ({"scaling": "medium"}, "scaling must be"),
        ({"params": {"steps": 3}}, "no parameter 'steps'"),
        ({"sizes": [0]}, "n must be at least 1; got 0"),
        ({"placements": ["scattered"]}, "placement must be one of packed, spread; got 'scattered'"),
    ],
)
def test_bad_specs_name_the_value(kwargs, message):
    args = {"experiment": "inner", "nranks": [1], **kwargs}
    with pytest.raises(ValueError, match=message):
        SpeedupSpec(**args).resolved()


def test_run_experiment_calls_back_after_every_point():
    seen = []

    def fake_execute(point):  # stands in for run_point: time halves with each doubling
        return {**point, "times": [1.0 / point["nranks"]], "oversubscribed": point["nranks"] > 2}

    result = run_experiment(
        SpeedupSpec("inner", nranks=[1, 2, 4], sizes=[100], variants=["c"], repeats=1),
        fake_execute,
        on_point=lambda res, p, i, n: seen.append((i, n, p["speedup"])),
    )
    assert [(i, n) for i, n, _ in seen] == [(1, 3), (2, 3), (3, 3)]
    assert [s for *_, s in seen] == pytest.approx([1.0, 2.0, 4.0])
    assert result.points[-1]["oversubscribed"] is True


def test_solver_variants_exist_in_the_solvers_and_benchmarks():
    from mpiworkbench.bench.catalog import BENCHMARKS
    from mpiworkbench.solvers import cg, halo
    from mpiworkbench.solvers.wave import kernels
    from mpiworkbench.speedup import inner
    for v in experiments.get("wave").variants:
        kernel, exchange = v.split("/")
        assert kernel in kernels.KERNELS and exchange in halo.EXCHANGES and exchange != "none"
    for v in experiments.get("cg").variants:
        variant, partition = v.split("/")
        assert variant in cg.VARIANTS and partition in cg.PARTITIONS
    assert set(experiments.get("bench").variants) <= set(BENCHMARKS)
    assert all(BENCHMARKS[b].min_ranks == 1 for b in experiments.get("bench").variants)
    assert set(experiments.get("inner").variants) == set(inner.VARIANTS)


def test_experiment_variants_cover_every_registered_choice():
    """Derived from the registries: a new kernel, exchange, CG variant or benchmark appears here."""
    from mpiworkbench.bench.catalog import BENCHMARKS
    from mpiworkbench.solvers import cg, halo
    from mpiworkbench.solvers.wave import kernels
    assert len(experiments.get("wave").variants) == len(kernels.KERNELS) * len(halo.NATIVE_EXCHANGES) == 9
    assert len(experiments.get("cg").variants) == len(cg.VARIANTS) * len(cg.PARTITIONS) == 6
    assert {"allreduce", "bcast", "barrier", "sendrecv", "bcast_binomial"} <= set(experiments.get("bench").variants)
    assert "pingpong" not in experiments.get("bench").variants  # needs two ranks
    assert set(BENCHMARKS) - set(experiments.get("bench").variants) == {"pingpong", "bw", "bibw", "ring"}
    from mpiworkbench.backends import implemented_names
    from mpiworkbench.solvers import heat
    assert experiments.get("heat").variants == heat.TIMED_EXCHANGES  # never the naive one
    for name in ("wave", "cg", "heat"):  # the backend dimension: the registry's implemented backends
        assert list(experiments.get(name).backends) == implemented_names()
