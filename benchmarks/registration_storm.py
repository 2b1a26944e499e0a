"""Registration at scale, and the controller's cost with its schedulers as processes or threads.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/registration_storm.py --engines 256
    .venv/bin/python benchmarks/registration_storm.py --stand-ins 256
    .venv/bin/python benchmarks/registration_storm.py --controller-sweep 2,16,64

``--engines N`` (the storm): one controller with the workbench's hub settings (250 ms heartbeat,
120 misses tolerated), then *N* real ``ipengine`` processes started at once (ipyparallel's local
launcher; plain engines, not MPI ranks: an MPI world of 256 ranks does not fit this 2-core
machine, and registration does not involve MPI). Reported: when the first and the last engine
registered, engines lost (not registered 300 s after the start), time per extra engine
(the last registration over *N*), and the engines' memory (resident, summed).

``--stand-ins N [--per-process K] [--hold S]``: the same storm with *N* **engine stand-ins**
instead of engines (``benchmarks/engine_standins.py``: ipyparallel's registration request and
heartbeats, no kernel, *K* to a process), for more engines than memory holds (a real engine takes
~100 MB). Reported as for engines, plus how many the hub still holds *S* seconds later (past the
missed heartbeats it tolerates); stand-ins answer no call. Every process started is stopped by
its pid at the end, also on a failure or Ctrl-C.

``--controller-sweep`` (schedulers as processes, ipyparallel's default, against threads,
``IPController.use_threads``): for each engine count and both ways, alternately in one run: the
controller's start time (until its connection file is written and a client connects), its memory
(the controller and its children, resident, summed), the time to register the engines, and the
median round trip of a no-op through a ``DirectView`` and through the coalescing broadcast view
(what ``wb.run`` uses), alternated call by call. The threaded controller is the workbench's
(``mpiworkbench.client.cluster.controller``: ipyparallel's with one bug mended, without which a coalescing
call never returns); the other is ipyparallel's as it is.

The machine has 2 cores: every figure beyond 2 engines is oversubscribed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Memory an engine takes at most, for the check before a storm (measured with this script: see docs/scale.md).
ENGINE_MB = 100
REGISTER_LIMIT_S = 300.0
CALL_LIMIT_S = 120.0


def noop() -> None:
    return None


def _cluster(threads: bool):
    import ipyparallel as ipp
    from traitlets.config import Config

    from mpiworkbench.client.cluster import controller, start

    args, config = start.hub_args(), Config()
    if threads:
        args += controller.ARGS
        config.LocalControllerLauncher.controller_cmd = controller.COMMAND
    return ipp.Cluster(engines="local", n=0, controller_ip="127.0.0.1", controller_args=args, delay=0,
                       cluster_id=f"storm-{time.time_ns()}", log_level=40, config=config)


def _rss_mb(pids) -> float:
    import psutil

    total = 0
    for pid in pids:
        try:
            process = psutil.Process(pid)
            total += process.memory_info().rss + sum(c.memory_info().rss for c in process.children(recursive=True))
        except psutil.NoSuchProcess:
            pass
    return total / 2**20


def _engines_rss_mb(cluster) -> float:
    """The resident memory of this process's child processes but the controller's: the engines."""
    import os

    import psutil

    controller = cluster.controller.process.pid
    engines = [c.pid for c in psutil.Process(os.getpid()).children() if c.pid != controller]
    return _rss_mb(engines)


def _register(cluster, client, n: int) -> tuple[list[float], float]:
    """Start *n* engines at once; the seconds at which each registered (from the start)."""
    t0 = time.perf_counter()
    cluster.start_engines_sync(n=n)
    seen: list[float] = []
    deadline = t0 + REGISTER_LIMIT_S
    while len(seen) < n and time.perf_counter() < deadline:
        count = len(client.ids)  # takes in the controller's registration notices
        now = time.perf_counter() - t0
        seen.extend([now] * (count - len(seen)))
        time.sleep(0.05)  # polling the client's registrations
    return seen, t0


def storm(n: int) -> str:
    import psutil

    need = n * ENGINE_MB
    if psutil.virtual_memory().available / 2**20 < need + 2048:
        return f"not run: {n} engines need about {need} MB free and 2 GB to spare"
    cluster = _cluster(threads=False)
    cluster.start_controller_sync()
    client = cluster.connect_client_sync()
    try:
        seen, _t0 = _register(cluster, client, n)
        memory = _engines_rss_mb(cluster)
        answers = len(client[:].apply_sync(noop)) if seen else 0
    finally:
        client.close()
        cluster.stop_cluster_sync()
    lost = n - len(seen)
    last = seen[-1] if seen else float("nan")
    return (f"| engines started | registered | lost | first s | last s | s per extra engine | answered a call | "
            f"engines' memory MB |\n|---|---|---|---|---|---|---|---|\n"
            f"| {n} | {len(seen)} | {lost} | {seen[0] if seen else float('nan'):.2f} | {last:.2f} | "
            f"{last / n:.3f} | {answers} | {memory:.0f} |")


def stand_in_storm(n: int, per_process: int, hold_s: float) -> str:
    """The storm with *n* engine **stand-ins** (``benchmarks/engine_standins.py``: registration
    and heartbeats, no kernel), *per_process* to a process, all started at once; then *hold_s*
    seconds later, how many the hub still holds (longer than it tolerates missed heartbeats)."""
    import subprocess

    from mpiworkbench.client.cluster.start import HEARTBEAT_MISSES, HEARTBEAT_MS

    cluster = _cluster(threads=False)
    cluster.start_controller_sync()
    client = cluster.connect_client_sync()
    hosts: list[subprocess.Popen] = []
    try:
        engine_json = Path(cluster.profile_dir) / "security" / f"ipcontroller-{cluster.cluster_id}-engine.json"
        t0 = time.perf_counter()
        for start in range(0, n, per_process):
            hosts.append(subprocess.Popen([sys.executable, str(Path(__file__).with_name("engine_standins.py")),
                                           str(engine_json), str(min(per_process, n - start))],
                                          stdout=subprocess.DEVNULL))
        seen: list[float] = []
        while len(seen) < n and time.perf_counter() < t0 + REGISTER_LIMIT_S:
            count = len(client.ids)  # takes in the controller's registration notices
            seen.extend([time.perf_counter() - t0] * (count - len(seen)))
            time.sleep(0.05)
        memory = _rss_mb([h.pid for h in hosts])
        time.sleep(hold_s)  # past the hub's tolerance of missed heartbeats
        held = len(client.ids)
    finally:
        for host in hosts:  # each by its pid, also on a failure or Ctrl-C
            host.terminate()
        for host in hosts:
            try:
                host.wait(10)
            except subprocess.TimeoutExpired:
                host.kill()
                host.wait()
        client.close()
        cluster.stop_cluster_sync()
    last = seen[-1] if seen else float("nan")
    tolerated = HEARTBEAT_MS * HEARTBEAT_MISSES / 1000
    return (f"| engine STAND-INS started (protocol-level, not engines) | processes | registered | lost | first s | "
            f"last s | s per extra stand-in | still held after {hold_s:g} s | stand-ins' memory MB |\n"
            f"|---|---|---|---|---|---|---|---|---|\n"
            f"| {n} | {len(hosts)} | {len(seen)} | {n - len(seen)} | {seen[0] if seen else float('nan'):.2f} | "
            f"{last:.2f} | {last / n:.4f} | {held} | {memory:.0f} |\n"
            f"(stand-ins register and answer heartbeats only: no kernel, no call answered; the hub drops an "
            f"engine after {tolerated:g} s of missed heartbeats)")


def controller_point(n: int, threads: bool, calls: int) -> dict:
    from mpiworkbench.core.processes import cpu_seconds, family

    t0 = time.perf_counter()
    cluster = _cluster(threads)
    cluster.start_controller_sync()
    client = cluster.connect_client_sync()
    started = time.perf_counter() - t0
    try:
        seen, _ = _register(cluster, client, n)
        assert len(seen) == n, f"{n - len(seen)} engines did not register"
        memory = _rss_mb([cluster.controller.process.pid])
        views = {"DirectView": client[:], "broadcast": client.broadcast_view(is_coalescing=True)}
        walls: dict[str, list[float]] = {name: [] for name in views}
        cpu = dict.fromkeys(views, 0.0)
        controller = family(cluster.controller.process.pid)  # found once
        for view in views.values():
            assert view.apply_async(noop).get(timeout=CALL_LIMIT_S) == [None] * n
        for _ in range(calls):  # alternated call by call
            for name, view in views.items():
                before, t = cpu_seconds(controller), time.perf_counter()
                view.apply_async(noop).get(timeout=CALL_LIMIT_S)
                walls[name].append(time.perf_counter() - t)
                cpu[name] += cpu_seconds(controller) - before
        rounds = {name: statistics.median(w) * 1e3 for name, w in walls.items()}
        rounds |= {f"{name}_cpu": used / calls * 1e3 for name, used in cpu.items()}
    finally:
        client.close()
        cluster.stop_cluster_sync()
    return {"start_s": started, "memory_mb": memory, "register_s": seen[-1], **{f"{k}_ms": v for k, v in rounds.items()}}


def controller_sweep(sizes: list[int], calls: int) -> str:
    lines = ["| engines | schedulers | controller start s | controller memory MB | register s | DirectView ms | "
             "broadcast ms | controller CPU ms per DirectView call | per broadcast call |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        for threads in (False, True):  # alternated within each size
            r = controller_point(n, threads, calls)
            lines.append(f"| {n} | {'threads' if threads else 'processes'} | {r['start_s']:.2f} | {r['memory_mb']:.0f} | "
                         f"{r['register_s']:.2f} | {r['DirectView_ms']:.1f} | {r['broadcast_ms']:.1f} | "
                         f"{r['DirectView_cpu_ms']:.1f} | {r['broadcast_cpu_ms']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", type=int, help="the storm: start this many engines at once")
    parser.add_argument("--controller-sweep", help="engine counts (comma separated): processes vs threads")
    parser.add_argument("--stand-ins", type=int,
                        help="the storm with this many protocol-level engine stand-ins (not engines)")
    parser.add_argument("--per-process", type=int, default=32, help="stand-ins per process")
    parser.add_argument("--hold", type=float, default=40.0, help="seconds to hold the stand-ins registered")
    parser.add_argument("--calls", type=int, default=20, help="round trips per point (controller sweep)")
    args = parser.parse_args(argv)
    if args.engines:
        print(storm(args.engines))
    if args.stand_ins:
        print(stand_in_storm(args.stand_ins, args.per_process, args.hold))
    if args.controller_sweep:
        print(controller_sweep([int(x) for x in args.controller_sweep.split(",")], args.calls))
    if args.engines or args.controller_sweep:
        print("(plain ipyparallel engines on 2 cores: oversubscribed beyond 2 engines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
