"""Start/stop time of a 2-engine MPI cluster: ipyparallel's defaults vs the Workbench.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/session_startstop.py [--n 2] [--repeats 5] [--json FILE]

Both are measured alternately in the same run, so the ratio survives a noisy machine.
"Ready" means what a user needs before the first cell: engines registered and (for the
Workbench) the engine→rank map built and ``%px`` activated.

Attaching (``--attach-repeats``, on by default): ``ipcluster start -n N --profile=mpi`` in a
scratch IPython directory, then ``Workbench.attach(profile="mpi")`` (rank map, thread level read
from the engines) timed against ipyparallel's own ``Cluster.from_file`` + ``connect_client_sync``
+ one call on every engine, alternately in the same run; detaching leaves the cluster up.

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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _ipcluster(n: int, ipython_dir: str) -> subprocess.Popen:
    """``ipcluster start`` of our ``mpi`` profile; returns once its engines answer."""
    from mpiworkbench.client import clusters
    from mpiworkbench.client.profile import create_profile

    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    server = subprocess.Popen([str(Path(sys.executable).with_name("ipcluster")), "start", "-n", str(n), "--profile=mpi"],
                              cwd=ipython_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        cluster = clusters.running_cluster("mpi")
        if cluster is not None and cluster.engines:
            client = cluster.connect_client_sync()
            client.wait_for_engines(n, timeout=120)
            client.close()
            return server
        time.sleep(0.1)  # polling for the cluster file
    server.kill()
    raise TimeoutError("ipcluster did not come up in 120 s")


def time_attach_ipyparallel(n: int) -> float:
    t0 = time.perf_counter()
    cluster = ipp.Cluster.from_file(profile="mpi", cluster_id="")
    client = cluster.connect_client_sync()
    client.wait_for_engines(n, timeout=60)
    client[:].apply_sync(os.getpid)
    elapsed = time.perf_counter() - t0
    client.close()
    return elapsed


def time_attach_workbench(n: int) -> float:
    t0 = time.perf_counter()
    wb = Workbench.attach(profile="mpi", activate=False)
    wb.view.apply_sync(os.getpid)
    elapsed = time.perf_counter() - t0
    assert wb.n == n
    wb.stop()  # detaches
    return elapsed


def measure_attach(n: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="mpiwb-attach-") as ipython_dir:
        os.environ["IPYTHONDIR"] = ipython_dir
        server = _ipcluster(n, ipython_dir)
        try:
            runs = {"ipyparallel from_file + connect": [], "Workbench.attach": []}
            for _ in range(repeats):
                runs["ipyparallel from_file + connect"].append(time_attach_ipyparallel(n))
                runs["Workbench.attach"].append(time_attach_workbench(n))
        finally:
            subprocess.run([str(Path(sys.executable).with_name("ipcluster")), "stop", "--profile=mpi"],
                           cwd=ipython_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    return {name: {"median_s": statistics.median(values), "runs": values} for name, values in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--attach-repeats", type=int, default=9, help="0 skips the attach measurement")
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
    attach = {}
    if args.attach_repeats:
        attach = measure_attach(args.n, args.attach_repeats)
        print(f"attach to a running {args.n}-engine `mpi` cluster (ipcluster), medians of {args.attach_repeats}:")
        for name, values in attach.items():
            print(f"  {name:34} {values['median_s']:.3f} s")
        ratio = attach["Workbench.attach"]["median_s"] / attach["ipyparallel from_file + connect"]["median_s"]
        print(f"  ratio Workbench.attach / ipyparallel: {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, "load_average_before": load_before, **summary, "attach": attach}, f, indent=2)


if __name__ == "__main__":
    main()
