"""The benchmark method, fit, throughput definitions and result files — no MPI needed."""

from __future__ import annotations

import csv
import math
import statistics
import subprocess
import sys

import numpy as np
import pytest

from mpiworkbench.bench import results
from mpiworkbench.bench.catalog import BENCHMARKS, get_benchmark, throughput_mbps
from mpiworkbench.core.machine import contamination_warnings
from mpiworkbench.bench.fit import fit_latency_bandwidth, overhead_vs_c, pingpong_fits
from mpiworkbench.bench.method import MIN_ITERATIONS, Policy, parse_size, parse_sizes
def test_default_sweep_is_8_bytes_to_8_mebibytes_in_powers_of_two():
    sizes = parse_sizes(None)
    assert sizes[0] == 8 and sizes[-1] == 8 * 2**20 and len(sizes) == 21
    assert all(b == 2 * a for a, b in zip(sizes, sizes[1:]))


@pytest.mark.parametrize("spec, expected", [
    ("8:64", [8, 16, 32, 64]), ("1K:4K", [1024, 2048, 4096]), ("5:20", [8, 16]),
    ("8,1K,1M", [8, 1024, 2**20]), ("100,3", [3, 100]), ("8M:8M", [8 * 2**20]),
])
def test_size_specs(spec, expected):
    assert parse_sizes(spec) == expected


@pytest.mark.parametrize("bad, message", [
    ("8:4", "1 <= min <= max; got 8:4"), ("12X", "cannot read message size '12X'"),
    ("0,8", "at least 1 byte; got 0"), ("9:15", "no power of two lies in the size range 9:15"),
])
def test_bad_sizes_say_what_to_do(bad, message):
    with pytest.raises(ValueError, match=message):
        parse_sizes(bad)


def test_parse_size_units_are_binary():
    assert parse_size("64K") == 65536 and parse_size("1MiB") == 2**20 and parse_size("8") == 8


def test_osu_rule_switches_above_8_kib():
    p = Policy()
    assert p.counts("latency", 8192) == (10000, 100)
    assert p.counts("latency", 8193) == (1000, 10)
    assert p.counts("bandwidth", 8) == (100, 10) and p.counts("bandwidth", 2**20) == (20, 2)
    assert p.counts("collective", 8) == (1000, 100) and p.counts("collective", 2**20) == (100, 10)
    assert Policy(iterations=7, warmup=0).counts("latency", 2**20) == (7, 0)


def test_time_cap():
    p = Policy(time_cap_s=1.0)
    assert p.capped(1000, 1e-6) == 1000          # fits
    assert p.capped(1000, 0.01) == 100           # 1 s / 10 ms
    assert p.capped(1000, 10.0) == MIN_ITERATIONS  # never below the floor
    assert p.capped(3, 10.0) == 3                # nor above what was asked


@pytest.mark.parametrize("kwargs, message", [
    ({"iterations": 0}, "iterations must be at least 1; got 0"),
    ({"collective_mode": "fast"}, "collective mode must be 'osu'"),
    ({"time_cap_s": 0}, "time cap must be positive"),
    ({"repeats": 0}, "repeats must be a whole number of at least 1; got 0"),
    ({"repeats": 2.5}, "repeats must be a whole number of at least 1; got 2.5"),
])
def test_policy_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Policy(**kwargs)


def test_method_is_described_in_the_output():
    text = str(Policy(collective_mode="block").describe())
    assert "back-to-back" in text and "MB = 10^6 B" in text and "OSU" in text
    assert Policy().describe()["repeats"] == "one timed loop per size and backend"
    assert "medians over them" in Policy(repeats=3).describe()["repeats"]


def test_throughput_definitions_follow_paper_001_and_osu():
    s, t = 1_000_000, 1e-3  # 1 MB in 1 ms
    assert throughput_mbps(get_benchmark("pingpong"), s, t, 2, 64) == pytest.approx(1000)
    assert throughput_mbps(get_benchmark("sendrecv"), s, t, 2, 64) == pytest.approx(2000)
    assert throughput_mbps(get_benchmark("alltoall"), s, t, 4, 64) == pytest.approx(6000)
    assert throughput_mbps(get_benchmark("bw"), s, t, 2, 64) == pytest.approx(64000)
    assert throughput_mbps(get_benchmark("bibw"), s, t, 2, 64) == pytest.approx(128000)
    assert throughput_mbps(get_benchmark("barrier"), 0, t, 2, 64) is None


def test_every_issue_benchmark_is_registered():
    wanted = {"pingpong", "bw", "bibw", "sendrecv", "bcast", "reduce", "allreduce", "alltoall",
              "gather", "scatter", "allgather", "barrier", "bcast_linear", "bcast_binomial"}
    assert wanted <= set(BENCHMARKS)
    with pytest.raises(ValueError, match="unknown benchmark 'pong'; choose one of"):
        get_benchmark("pong")


def test_fit_recovers_latency_and_bandwidth():
    sizes = [8 * 2**k for k in range(21)]
    times = [14.0 + s / 944.475 for s in sizes]  # thesis Table 5.1, mpi4py
    fit = fit_latency_bandwidth(sizes, times)
    assert fit["latency_us"] == pytest.approx(14.0, abs=1e-6)
    assert fit["bandwidth_MBps"] == pytest.approx(944.475, rel=1e-9)
    assert fit["rms_residual_us"] < 1e-6 and fit["points"] == 21


def test_fit_reports_its_residual():
    rng = np.random.default_rng(0)
    sizes = [8 * 2**k for k in range(12)]
    times = [2.0 + s / 5000 + rng.normal(0, 0.5) for s in sizes]
    fit = fit_latency_bandwidth(sizes, times)
    assert 0.1 < fit["rms_residual_us"] < 1.0
    with pytest.raises(ValueError, match="at least two distinct message sizes"):
        fit_latency_bandwidth([8, 8], [1.0, 1.1])


def _row(backend, size, t, bench="pingpong", run="r1"):
    return {"run_id": run, "benchmark": bench, "backend": backend, "size": size, "t_us": t,
            "nprocs": 2, "iterations": 10, "warmup": 1, "capped": False, "mode": "m",
            "thread_level": "single", "t_avg_us": t, "t_min_us": t, "t_max_us": t,
            "throughput_MBps": size / t, "throughput_def": "S/t", "flagged": False, "time": "0"}


def test_overhead_against_c_per_size():
    rows = [_row("c", 8, 1.0), _row("mpi4py-buf", 8, 1.5), _row("c", 16, 2.0), _row("mpi4py-buf", 16, 2.0)]
    got = {(o["backend"], o["size"]): o["overhead_pct"] for o in overhead_vs_c(rows)}
    assert got == {("mpi4py-buf", 8): pytest.approx(50.0), ("mpi4py-buf", 16): pytest.approx(0.0)}
    fits = pingpong_fits(rows)
    assert set(fits) == {"c", "mpi4py-buf"} and fits["c"]["smallest_t_us"] == 1.0


def test_results_round_trip_json_and_csv(tmp_path):
    rows = [_row("c", 8, 1.0), _row("c", 1024, 2.0), _row("numba-mpi", 8, 1.1), _row("numba-mpi", 1024, 2.2)]
    doc = results.build("pingpong", "r1", Policy().describe(), {"np": 2, "mpi_library": "X"}, rows,
                        {"mpi4py-obj": "why"}, "NumPy", complete=False)
    results.save(tmp_path / "out.json", doc)
    back = results.load(tmp_path / "out.json")
    assert back["rows"] == rows and back["complete"] is False and set(back["fit"]) == {"c", "numba-mpi"}
    results.save(tmp_path / "out.csv", doc)
    with open(tmp_path / "out.csv") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 4 and table[0]["backend"] == "c" and table[0]["mpi_library"] == "X"
    assert [r["backend"] for r in results.table_5_1(doc)] == ["c", "numba-mpi"]
    assert "numba-mpi" in results.format_rows(rows)
    with pytest.raises(FileNotFoundError, match="no results file"):
        results.load(tmp_path / "missing.json")


def test_launches_merge_into_medians_and_keep_every_launch():
    def doc(run, times, complete=True, load=0.0):
        rows = [_row(b, size, t, run=run) for (b, size), t in times.items()]
        return results.build("pingpong", run, Policy().describe(), {"np": 2, "foreign_load_cores": load,
                             "warnings": []}, rows, {}, "NumPy", complete=complete)

    docs = [doc("a", {("c", 8): 1.0, ("mpi4py-buf", 8): 2.0, ("c", 64): 3.0, ("mpi4py-buf", 64): 5.0}),
            doc("b", {("c", 8): 2.0, ("mpi4py-buf", 8): 3.0, ("c", 64): 9.0, ("mpi4py-buf", 64): 7.0}),
            doc("c", {("c", 8): 1.5, ("mpi4py-buf", 8): 2.5}, complete=False, load=1.2)]  # stopped after 8 B
    merged = results.merge_launches(docs, planned=3)
    got = {(r["backend"], r["size"]): (r["t_us"], r["launches"], r["t_us_launches"]) for r in merged["rows"]}
    assert got == {("c", 8): (1.5, 3, [1.0, 2.0, 1.5]), ("mpi4py-buf", 8): (2.5, 3, [2.0, 3.0, 2.5]),
                   ("c", 64): (6.0, 2, [3.0, 9.0]), ("mpi4py-buf", 64): (6.0, 2, [5.0, 7.0])}
    assert [(r["size"], r["backend"]) for r in merged["rows"]] == [(8, "c"), (8, "mpi4py-buf"), (64, "c"),
                                                                   (64, "mpi4py-buf")]
    assert not merged["complete"] and len(merged["launches"]) == 3 and merged["launches"][2]["foreign_load_cores"] == 1.2
    assert merged["rows"][0]["throughput_MBps"] == pytest.approx(statistics.median([8 / 1.0, 8 / 2.0, 8 / 1.5]))
    assert set(merged["fit"]) == {"c", "mpi4py-buf"} and {o["size"] for o in merged["overhead_vs_c"]} == {8, 64}
    assert "3 launches" in merged["method"]["launches"] and "median of 2 launches" in results.format_rows(merged["rows"])
    assert results.merge_launches(docs[:2], planned=2)["complete"]
    with pytest.raises(ValueError, match="no launch documents"):
        results.merge_launches([])


def test_environment_warnings_flag_load_and_oversubscription():
    clean = {"oversubscribed": False, "foreign_load_cores": 0.0, "hosts": {"h": [0, 1]}, "cores_available": 2}
    assert contamination_warnings(clean) == []
    bad = {**clean, "oversubscribed": True, "foreign_load_cores": 1.5, "hosts": {"h": [0, 1, 2]}}
    text = " ".join(contamination_warnings(bad))
    assert "oversubscribed: 3 ranks on 2 core(s)" in text and "loaded machine" in text
    assert math.isfinite(bad["foreign_load_cores"])


def test_cli_module_is_cheap_to_import():
    code = ("import sys, mpiworkbench.cli.bench as b, mpiworkbench.cli as c; c.build_parser(); "
            "print('mpi4py.MPI' in sys.modules, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_cli_parses_the_documented_command():
    from mpiworkbench.cli import build_parser
    args = build_parser().parse_args(
        ["bench", "pingpong", "--np", "2", "--backend", "mpi4py-obj,mpi4py-buf,numba-mpi,c", "--json", "out.json"]
    )
    assert args.name == "pingpong" and args.np == 2 and args.json == "out.json"
    assert args.backend.split(",") == ["mpi4py-obj", "mpi4py-buf", "numba-mpi", "c"]
    assert args.thread_level == "single" and args.mode == "osu" and args.repeat == 1
    assert build_parser().parse_args(["bench", "allreduce", "--repeat", "5"]).repeat == 5
