"""The credibility benchmark's checks (benchmarks/bench_credibility.py) can pass and can fail.

Synthetic blocks: every program shares each block's machine state (a random factor up to 3x),
as on the VM; the checks must see through it to what the programs themselves cost.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cred():
    spec = importlib.util.spec_from_file_location("bench_credibility", ROOT / "benchmarks" / "bench_credibility.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic(cred, cost: dict[str, float], blocks: int = 25, noise: float = 0.03) -> dict:
    """values[(launch, block, bench, size, who)]: cost x the block's state x a little own noise."""
    plan, rng, values = cred.plan, random.Random(7), {}
    for b in range(blocks):
        state = rng.choice([1.0, 1.0, 2.3, 3.0])
        for bench, sizes in (("pingpong", plan.PINGPONG_SIZES), ("allreduce", plan.ALLREDUCE_SIZES)):
            for size in sizes:
                whos = ["c", "mpi4py-buf", *[p for p in plan.PROGRAMS[bench] if p != "ours"]]
                for who in whos:
                    own = cost.get(who, 1.0) * (1 + rng.uniform(-noise, noise))
                    values[(b // 5, b % 5, bench, size, who)] = size ** 0.5 * state * own
    return values


def test_equal_programs_pass_all_25_checks_whatever_the_block_states(cred):
    checks = cred.make_checks(synthetic(cred, {}))
    assert len(checks) == 25 and all(c["ok"] for c in checks), [c for c in checks if not c["ok"]]
    assert all(c["pairs"] == 25 for c in checks)


def test_a_harness_12_percent_slower_fails_its_checks(cred):
    checks = cred.make_checks(synthetic(cred, {"c": 1.12}))
    failed = {(c["check"].split(" (")[0], c["size"]) for c in checks if not c["ok"]}
    assert ("pingpong c / bare C", 8) in failed and ("allreduce c / bare C", 1 << 20) in failed
    assert ("pingpong c vs each rival", 1 << 20) in failed
    assert not any("mpi4py-buf /" in name for name, _ in failed)


def test_c_must_be_within_5_percent_of_the_fastest_rival(cred):
    checks = {(c["check"], c["size"]): c for c in cred.make_checks(synthetic(cred, {"bare mpi4py": 0.9}))}
    fastest = checks[("pingpong c vs each rival (fastest: bare mpi4py)", 65536)]
    assert not fastest["ok"] and fastest["ratio"] == pytest.approx(1 / 0.9, rel=0.03)
    assert checks[("pingpong c / bare C", 65536)]["ok"]  # the pairwise agreement still holds
