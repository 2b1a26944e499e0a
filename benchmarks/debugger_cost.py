"""What does being debuggable cost while no debugger is attached? And while one is?

    python benchmarks/debugger_cost.py [--launches 2] [--calls 100] [--blocks 5] [--json out.json]

Every workbench engine's kernel has the debugger's sockets (``client/engine_start.debuggable``);
``MPIWORKBENCH_DEBUGGER=0`` starts engines without them, as ipyparallel's own. Each launch
starts one 2-rank world of each kind, back to back (order alternating per launch), and measures
in each:

* the ``%%px`` round trip: ``wb.execute("pass")`` (what ``%%px`` runs), median of ``--calls``;
* a traced ping-pong: 8 B, ``mpi4py`` buffer API (the workbench's own), under ``wb.trace()``, the
  median over ``--blocks`` blocks of the median round trip;
* in the debuggable world also the same ping-pong while ``wb.debug()`` is attached with no
  breakpoint (debugpy then traces the ranks' Python code: what a debugging session costs).

Reported as ratios measured in one launch (the machine is shared and noisy): debuggable / plain
with nobody attached, and attached / detached.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

PINGPONG_ITERS = 2000


def _has_debugger() -> bool:
    from IPython import get_ipython

    return get_ipython().kernel.debugpy_stream is not None


def _pingpong(iters: int) -> float | None:
    """The workbench's own ping-pong (8 B, mpi4py buffer API): median seconds per round trip."""
    from mpi4py import MPI

    from mpiworkbench.syntax.demos.pickle_vs_buffer import pingpong

    return pingpong(MPI.COMM_WORLD, "mpi4py-buf", n=1, repeats=iters)


def _traced_pingpong(wb, blocks: int) -> float:
    times = []
    for _ in range(blocks):
        with wb.trace(lines=False):
            times.append(wb.run(_pingpong, PINGPONG_ITERS)[0])
    return statistics.median(times)


def _round_trip(wb, calls: int) -> float:
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        wb.execute("pass")
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(debuggable: bool, calls: int, blocks: int) -> dict:
    from mpiworkbench import Workbench

    if debuggable:
        os.environ.pop("MPIWORKBENCH_DEBUGGER", None)
    else:
        os.environ["MPIWORKBENCH_DEBUGGER"] = "0"
    try:
        with Workbench(n=2, activate=False) as wb:
            wb.start()
            assert wb.run(_has_debugger) == [debuggable] * 2, "the engines are not of the kind asked for"
            wb.execute("pass")  # warm up
            found = {"round_trip_s": _round_trip(wb, calls), "pingpong_s": _traced_pingpong(wb, blocks)}
            if debuggable:
                with wb.debug():
                    found["attached_pingpong_s"] = _traced_pingpong(wb, blocks)
            return found
    finally:
        os.environ.pop("MPIWORKBENCH_DEBUGGER", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=2)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    for launch in range(args.launches):
        order = [False, True] if launch % 2 == 0 else [True, False]
        found = {kind: measure(kind, args.calls, args.blocks) for kind in order}
        plain, debuggable = found[False], found[True]
        row = {
            "launch": launch,
            "plain": plain,
            "debuggable": debuggable,
            "round_trip_ratio": debuggable["round_trip_s"] / plain["round_trip_s"],
            "pingpong_ratio": debuggable["pingpong_s"] / plain["pingpong_s"],
            "attached_ratio": debuggable["attached_pingpong_s"] / debuggable["pingpong_s"],
        }
        rows.append(row)
        print(f"launch {launch}: %%px round trip {plain['round_trip_s'] * 1e3:.2f} ms plain, "
              f"{debuggable['round_trip_s'] * 1e3:.2f} ms debuggable ({row['round_trip_ratio']:.2f}x); "
              f"traced ping-pong {plain['pingpong_s'] * 1e6:.1f} us plain, {debuggable['pingpong_s'] * 1e6:.1f} us "
              f"debuggable ({row['pingpong_ratio']:.2f}x), {debuggable['attached_pingpong_s'] * 1e6:.1f} us with "
              f"a debugger attached ({row['attached_ratio']:.2f}x)", flush=True)
    for key in ("round_trip_ratio", "pingpong_ratio", "attached_ratio"):
        print(f"median {key}: {statistics.median(r[key] for r in rows):.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
