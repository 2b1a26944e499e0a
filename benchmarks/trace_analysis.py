"""How long does it take to say why a run was slow? Wait states, POP factors and the critical
path of a 10-second 2-rank wave trace, against the time to load that trace.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/trace_analysis.py [--seconds 10] [--mesh 65] [--repeats 3] [--json FILE]

Traces ``mpiworkbench wave --np 2 --mesh M`` (a short calibration run first picks the steps that
fill ``--seconds``), then, in this process, times (median of ``--repeats``, after one warm-up):
loading the trace (reading the Chrome JSON and building the Trace, messages matched), and the
analysis ``--analyse`` makes (``mpiworkbench.cli.trace.analysis``: dependencies once, wait states,
POP factors with the ideal-network replay, critical path, their tables); reported in seconds and
as analysis / load. The goal: analysis under 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mpiworkbench.cli.trace import analysis
from mpiworkbench.trace.model import Trace


def traced_wave(out: Path, mesh: int, steps: int) -> None:
    """``mpiworkbench trace --out OUT -- wave --np 2 --mesh MESH --steps STEPS``."""
    subprocess.run([sys.executable, "-m", "mpiworkbench", "trace", "--out", str(out), "--capacity", "5000000", "--",
                    "wave", "--np", "2", "--mesh", str(mesh), "--steps", str(steps)],
                   check=True, capture_output=True, text=True)


def load(path: Path) -> Trace:
    trace = Trace.from_chrome(json.loads(path.read_text()))
    trace.messages()
    return trace


def analyse(trace: Trace) -> dict:
    """What ``mpiworkbench trace --analyse`` computes and writes (its own function)."""
    found = analysis(trace)
    return {"waiting_fraction": found["wait_states"]["fraction"], "parallel_efficiency": found["efficiency"]["parallel"],
            "critical_hops": found["critical_path"]["hops"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the traced run (default 10)")
    parser.add_argument("--mesh", type=int, default=65, help="wave mesh points per axis (default 65)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mpiwb-trace-analysis-") as tmp:
        probe, path = Path(tmp) / "probe.json", Path(tmp) / "wave.json"
        traced_wave(probe, args.mesh, 100)
        per_step = load(probe).duration / 100
        steps = max(int(args.seconds / per_step), 10)
        traced_wave(path, args.mesh, steps)
        load(path), analyse(load(path))  # warm-up
        loads, analyses = [], []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            trace = load(path)
            t1 = time.perf_counter()
            result = analyse(trace)
            t2 = time.perf_counter()
            loads.append(t1 - t0)
            analyses.append(t2 - t1)
    row = {"mesh": args.mesh, "steps": steps, "trace_s": trace.duration, "calls": len(trace),
           "messages": len(trace.messages()), "load_s": statistics.median(loads),
           "analysis_s": statistics.median(analyses), **result}
    row["analysis_over_load"] = row["analysis_s"] / row["load_s"]
    print(f"{row['calls']} calls ({row['trace_s']:.1f} s of a 2-rank wave, mesh {args.mesh}, {steps} steps): "
          f"analysis {row['analysis_s']:.3f} s, load {row['load_s']:.3f} s, ratio {row['analysis_over_load']:.2f}; "
          f"waiting {row['waiting_fraction']:.1%}, parallel efficiency {row['parallel_efficiency']:.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
