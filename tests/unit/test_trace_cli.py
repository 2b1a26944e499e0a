"""``mpiworkbench trace -- wave --np N …`` from a shell: the Chrome JSON holds what the wave
solver's halo exchange did, rank by rank; bad use is refused clearly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest


def _mpiworkbench(*argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpiworkbench", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=600, check=False)


@pytest.mark.parametrize("np_", [1, 2, 3])
def test_trace_of_wave_steps_writes_chrome_json(tmp_path, np_):
    steps = 3
    out = tmp_path / "wave.json"
    proc = _mpiworkbench("trace", "--out", str(out), "--", "wave", "--np", str(np_), "--mesh", "17",
                         "--steps", str(steps), "--dims", f"{np_},1,1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "written to" in proc.stdout
    data = json.loads(out.read_text())
    calls = Counter((e["pid"], e["name"]) for e in data["traceEvents"] if e["ph"] == "X")
    for rank in range(np_):
        # the halo exchange: one Sendrecv per face direction per step (PROC_NULL at the walls)
        assert calls[(rank, "MPI_Sendrecv")] == 6 * steps
    halo = [e for e in data["traceEvents"] if e["ph"] == "X" and e["name"] == "MPI_Sendrecv" and "peer" in e["args"]]
    # along x, each of the np-1 inner faces carries one message each way per step
    assert len(halo) == 2 * (np_ - 1) * steps
    assert sum(e["ph"] == "s" for e in data["traceEvents"]) >= len(halo)  # each one matched: an arrow


def test_trace_needs_a_command(tmp_path):
    proc = _mpiworkbench("trace", "--out", str(tmp_path / "t.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "name the command to trace" in proc.stderr


@pytest.mark.parametrize("argv", [
    ["trace", "--out", "{missing}/t.json", "--", "wave", "--np", "2", "--mesh", "17", "--steps", "2"],
    ["trace", "--out", "{tmp}/t.json", "--", "wave", "--np", "2", "--mesh", "17", "--json", "{missing}/w.json"],
    ["wave", "--np", "2", "--mesh", "17", "--save", "{missing}/f.npy"],
    ["speedup", "inner", "--np", "1,2", "--plot", "{missing}/s.png"],
    ["bench", "pingpong", "--np", "2", "--csv", "{tmp}"],
])
def test_an_output_that_cannot_be_written_is_named_before_any_job_runs(tmp_path, argv):
    missing = tmp_path / "no" / "such"
    argv = [a.format(missing=missing, tmp=tmp_path) for a in argv]
    proc = _mpiworkbench(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = proc.stderr
    assert (f"the directory {missing} does not exist" in said) or (f"{str(tmp_path)!r} is a directory" in said), said
    # refused up front: no rank started, so no job printed anything and nothing was written
    assert "mpiexec" not in said.lower() and proc.stdout == "", proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [], sorted(tmp_path.iterdir())
