"""What ordering every call through the MPI world's turn costs (``mpiworkbench.client.calls.turns``).

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/shared_world.py [--n 2] [--calls 200] [--blocks 7] [--json FILE]

On one started cluster, in the same run and alternating block by block, times

* ``wb.run(f)``: a round trip of a small function on every rank (an ``allreduce`` of one int),
* ``%%px``: a cell with the same ``allreduce``, through the workbench's ``%%px`` magic in an
  IPython shell, as a notebook runs it,
* ``ipyparallel``: the same call through a bare ``DirectView`` (no hang protection, no turn),

with the turn (the default) and without it (the session's world handle taken away for the
block: an unordered client, as before the shared-world issue). Prints per-call medians over
blocks, the added time per call and the ratio ordered / unordered; ``--json`` keeps every
block. A second process of its own is not needed: the uncontended turn is what one notebook
pays on every call.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from mpiworkbench import Workbench


def allreduce_one():
    from mpi4py import MPI

    return MPI.COMM_WORLD.allreduce(1)


CELL = "from mpi4py import MPI\n_x = MPI.COMM_WORLD.allreduce(1)\n"


def per_call(f, calls: int) -> float:
    f()  # warm
    t0 = time.perf_counter()
    for _ in range(calls):
        f()
    return (time.perf_counter() - t0) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=7)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    wb = Workbench(n=args.n, oversubscribe=True).start()  # activate: %%px on this shell
    world = wb._turns
    samples: dict[str, list[float]] = {k: [] for k in ("run ordered", "run unordered", "px ordered",
                                                         "px unordered", "ipyparallel")}
    cases = {
        "run": lambda: wb.run(allreduce_one),
        "px": lambda: shell.run_cell_magic("px", "", CELL),
    }
    try:
        for block in range(args.blocks):
            order = ["ordered", "unordered"] if block % 2 == 0 else ["unordered", "ordered"]
            for name, call in cases.items():
                for mode in order:
                    wb._connection.turns = world if mode == "ordered" else None
                    samples[f"{name} {mode}"].append(per_call(call, args.calls))
            wb._connection.turns = world
            samples["ipyparallel"].append(per_call(lambda: wb.view.apply_sync(allreduce_one), args.calls))
            print(f"block {block + 1}/{args.blocks}", file=sys.stderr, flush=True)
    finally:
        wb._connection.turns = world
        wb.stop()

    med = {k: statistics.median(v) for k, v in samples.items()}
    load = os.getloadavg()[0]
    print(f"{args.n} ranks, {args.calls} calls x {args.blocks} blocks, load average {load:.1f}")
    print(f"{'call':<10} {'ordered ms':>11} {'unordered ms':>13} {'added ms':>9} {'ratio':>6}")
    for name in cases:
        o, u = med[f"{name} ordered"], med[f"{name} unordered"]
        print(f"{name:<10} {o * 1e3:>11.3f} {u * 1e3:>13.3f} {(o - u) * 1e3:>9.3f} {o / u:>6.3f}")
    print(f"{'bare ipp':<10} {med['ipyparallel'] * 1e3:>11.3f}   (DirectView.apply_sync, for reference)")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"n": args.n, "calls": args.calls, "load": load, "samples_s": samples,
                       "median_s": med}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
