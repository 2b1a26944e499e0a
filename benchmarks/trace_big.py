"""A big trace from a notebook's point of view: record N MPI calls per rank on a Workbench,
gather them (by MPI to rank 0, then one pull), open them in the trace view, zoom.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/trace_big.py [--n 2] [--calls 500000] [--repeats 2] [--json FILE]

Each rank makes ``--calls`` 8-byte ``Sendrecv`` to itself on ``COMM_SELF`` (a few µs each, no
waiting for another rank: the calls themselves are the load). Reported, per repeat and as the
median: the traced block (the calls), the gather (``wb.trace()``'s exit: stop, ``comm.gather`` of
every rank's events, building the Trace on rank 0, pulling it), opening ``TraceView`` (summary,
messages matched, timeline downsampled, matrix, time per kind), one zoom to a window of 1000
calls, and the reference: the same block untraced, measured in the same run, as the ratio
traced/untraced of the block itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def self_sendrecv(calls: int) -> float:
    """Engine side: *calls* Sendrecv of 8 bytes to itself; the seconds they took."""
    import time

    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_SELF
    out, got = np.zeros(1), np.zeros(1)
    t0 = time.perf_counter()
    for _ in range(calls):
        comm.Sendrecv(out, 0, 1, got, 0, 1)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2, help="ranks (default 2)")
    parser.add_argument("--calls", type=int, default=500_000, help="MPI calls per rank (default 500000)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    from mpiworkbench import Workbench
    from mpiworkbench.widgets.trace import TraceView

    rows: list[dict] = []
    with Workbench(n=args.n) as wb:
        wb.timeout = 600
        for _ in range(args.repeats):
            untraced = max(wb.run(self_sendrecv, args.calls))
            t0 = time.perf_counter()
            with wb.trace(capacity=args.calls + 1000) as t:
                traced = max(wb.run(self_sendrecv, args.calls))
                t1 = time.perf_counter()
            t2 = time.perf_counter()
            trace = t.trace
            view = TraceView(trace)
            t3 = time.perf_counter()
            ev = trace.events
            middle = float(ev["t0"][len(ev) // 4])
            view.zoom.value = (middle, float(ev["t1"][len(ev) // 4 + 1000 // args.n]))
            t4 = time.perf_counter()
            rows.append({"events": len(trace), "dropped": sum(trace.dropped), "block_s": t1 - t0,
                         "untraced_s": untraced, "traced_calls_s": traced, "traced_over_untraced": traced / untraced,
                         "gather_s": t2 - t1, "open_view_s": t3 - t2, "zoom_s": t4 - t3})
            print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}), flush=True)
    median = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"{args.n} ranks × {args.calls} calls = {int(median['events'])} events: gather {median['gather_s']:.2f} s, "
          f"open the view {median['open_view_s']:.2f} s, zoom {median['zoom_s']:.2f} s; "
          f"the calls traced/untraced ×{median['traced_over_untraced']:.2f} (medians of {len(rows)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": rows, "median": median}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
