"""Start/stop time of a 2-engine MPI cluster: ipyparallel's defaults vs the Workbench.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/session_startstop.py [--n 2] [--repeats 5] [--json FILE]

Both are measured alternately in the same run, so the ratio survives a noisy machine.
"Ready" means what a user needs before the first cell: engines registered and (for the
Workbench) the engine→rank map built and ``%px`` activated.

Where the time goes with ipyparallel's defaults: the hub counts an engine as registered
only after a heartbeat round, and its heartbeat period is 3 s (the Workbench uses
250 ms, tolerating 120 misses); ``stop_cluster`` stops the controller and engines at
once, and engines that lose their hub mid-shutdown take ~3 s longer to exit (the
Workbench stops engines first, then the controller); ``Cluster.delay`` adds 1 s between
controller and engines in ``ipcluster`` (0 here).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import ipyparallel as ipp
from traitlets.config import Config

from mpiworkbench import Workbench
from mpiworkbench.core.launch import find_mpiexec
def time_defaults(n: int) -> tuple[float, float]:
    config = Config()
    config.MPILauncher.mpi_cmd = [find_mpiexec()]  # only so mpiexec is found; otherwise defaults
    t0 = time.perf_counter()
    cluster = ipp.Cluster(engines="mpi", n=n, config=config, cluster_id=f"bench-default-{time.time_ns()}")
    client = cluster.start_and_connect_sync()
    client[:].apply_sync(os.getpid)
    t1 = time.perf_counter()
    client.close()
    cluster.stop_cluster_sync()
    return t1 - t0, time.perf_counter() - t1


def time_workbench(n: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    wb = Workbench(n=n).start()
    wb.view.apply_sync(os.getpid)
    t1 = time.perf_counter()
    wb.stop()
    return t1 - t0, time.perf_counter() - t1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"ipyparallel defaults": [], "Workbench": []}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        runs["ipyparallel defaults"].append(time_defaults(args.n))
        runs["Workbench"].append(time_workbench(args.n))
    summary = {}
    print(f"{args.n} engines, {args.repeats} alternating runs, load average before: {load_before:.2f}")
    print(f"{'':22} {'start→ready (s)':>16} {'stop (s)':>10}")
    for name, values in runs.items():
        start = statistics.median(v[0] for v in values)
        stop = statistics.median(v[1] for v in values)
        summary[name] = {"start_s": start, "stop_s": stop, "runs": values}
        print(f"{name:22} {start:16.2f} {stop:10.2f}")
    ours, theirs = summary["Workbench"], summary["ipyparallel defaults"]
    print(f"ratio Workbench/defaults: start {ours['start_s'] / theirs['start_s']:.2f}, stop {ours['stop_s'] / theirs['stop_s']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "load_average_before": load_before, **summary}, f, indent=2)


if __name__ == "__main__":
    main()
