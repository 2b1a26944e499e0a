"""``wb.push`` (one transfer to rank 0, then written once per host and mapped by every rank as its
own copy-on-write array: ``core/transfer.py``, ``core/hostcopy.py``) against ipyparallel's own
``DirectView.push`` (the array sent to every engine through the controller), alternated in one run.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/push.py [--n 8] [--mib 64] [--repeats 3]

Each repeat pushes the same array of ``--mib`` MiB of float64 both ways and checks that every
rank holds exactly it (shape, dtype, sum, first bytes, after the timed part). Reported: the median
seconds of each way, every repeat's, and their ratio. The machine has 2 cores: beyond 2 engines
the figures are oversubscribed; the ratio is what to read. (``wb.push``'s ranks wait asleep while
rank 0 writes; with ``MPIWORKBENCH_YIELD_WHILE_WAITING=1`` MPICH's own waits yield too.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def held(name: str):
    from IPython import get_ipython

    value = get_ipython().user_ns.pop(name)
    return value.shape, str(value.dtype), float(value.sum()), bytes(value.tobytes()[:64])


def main(argv=None) -> int:
    import numpy as np

    from mpiworkbench import Workbench

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=8, help="engines")
    parser.add_argument("--mib", type=float, default=64, help="MiB pushed")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    data = np.random.default_rng(0).standard_normal(int(args.mib * 2**20 / 8))
    expected = (data.shape, str(data.dtype), float(data.sum()), data.tobytes()[:64])
    wb = Workbench(n=args.n, oversubscribe=True, timeout=1200, activate=False).start()
    try:
        times = {"DirectView.push": [], "wb.push (rank 0, then MPI)": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            wb.view.push({"a": data}, block=True)
            times["DirectView.push"].append(time.perf_counter() - t0)
            assert wb.run(held, "a") == [expected] * args.n, "DirectView.push: not the same array on every rank"
            t0 = time.perf_counter()
            wb.push("a", data)
            times["wb.push (rank 0, then MPI)"].append(time.perf_counter() - t0)
            assert wb.run(held, "a") == [expected] * args.n, "wb.push: not the same array on every rank"
    finally:
        wb.stop()
    old, new = (statistics.median(v) for v in times.values())
    print(f"| engines | MiB | DirectView.push s | wb.push s | speed-up |\n|---|---|---|---|---|\n"
          f"| {args.n} | {args.mib:g} | {old:.3f} | {new:.3f} | {old / new:.1f}x |")
    print(f"(medians of {args.repeats}, alternated; every rank checked to hold the same array; "
          f"{'oversubscribed: ' + str(args.n) + ' engines on 2 cores' if args.n > 2 else '2 engines'})")
    for name, values in times.items():
        print(f"{name}: " + ", ".join(f"{v:.3f}" for v in values) + " s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
