"""The CLI starts its own mpiexec (with a wall-clock limit) and reports bad input once."""

from __future__ import annotations

import json
import subprocess
import sys


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpiworkbench", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def test_info_launches_mpiexec_and_writes_json(tmp_path):
    out = tmp_path / "info.json"
    result = _cli("info", "--np", "2", "--json", str(out))
    assert result.returncode == 0, result.stderr
    facts = json.loads(out.read_text())
    assert facts["np"] == 2 and facts["mpi_standard"] and "MPICH" in facts["library"]
    assert facts["packages"]["mpi4py"] and facts["cores"] >= 1
    assert result.stdout.count("MPI library") == 1  # rank 0 reports, not every rank


def test_np_must_be_positive():
    result = _cli("info", "--np", "0")
    assert result.returncode == 2
    assert "--np must be at least 1; got 0" in result.stderr


def test_bad_input_is_reported_once_not_per_rank():
    result = _cli("wave", "--np", "2", "--mesh", "17", "--steps", "-3")
    assert result.returncode != 0
    assert result.stderr.count("error:") == 1, result.stderr
    assert "-3" in result.stderr
