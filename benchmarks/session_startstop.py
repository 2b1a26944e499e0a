"""Start/stop time of an MPI cluster: ipyparallel's defaults vs the Workbench, a rank sweep,
the phases of a start, and the same against an earlier commit measured in the same run.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/session_startstop.py [--n 2] [--repeats 5] [--json FILE]
    .venv/bin/python benchmarks/session_startstop.py --sweep 2,4,8,16 --baseline HEAD~1 --repeats 3

Everything compared is measured alternately in the same run, so the ratio survives a noisy,
shared machine. "Ready" means what a user needs before the first cell: engines registered and
(for the Workbench) the engine→rank map built and ``%px`` activated.

``--sweep``: for each rank count, ``Workbench(n).start()`` to ready, the phases of that start
(client side: around each step; engine side: each rank's interpreter start, its imports and
``MPI_Init``, stamped by a ``sitecustomize`` put on the engines' ``PYTHONPATH`` for the run),
attaching a second session to the running cluster, a ``%%px`` allreduce round trip through
the workbench's magics (and, alternated with it, the same cell by a bare ``view.execute`` and a
no-op ``view.apply_sync``: ipyparallel's own round trips, the floor under the workbench's) and
``stop``. Each start runs in a fresh process. ``--baseline COMMIT``
checks *COMMIT* out in a ``git worktree`` under ``/tmp`` and runs the same measurement with
that code (``PYTHONPATH``), alternating with the working tree's; the worktree is removed at
the end. Ratios new/old are per rank count, medians of the repeats.

Attaching (``--attach-repeats``, on by default without ``--sweep``): ``ipcluster start -n N
--profile=mpi`` in a scratch IPython directory, then ``Workbench.attach(profile="mpi")`` timed
against ipyparallel's own ``Cluster.from_file`` + ``connect_client_sync`` + one call on every
engine, alternately in the same run; detaching leaves the cluster up.

Where the time goes with ipyparallel's defaults: the hub counts an engine as registered
only after a heartbeat round, and its heartbeat period is 3 s (the Workbench uses
250 ms, tolerating 120 misses); ipyparallel starts the engines only once the controller is up
(the Workbench starts both at once, the engines read the controller's connection file);
``stop_cluster`` stops the controller and engines at once, and engines that lose their hub
mid-shutdown take ~3 s longer to exit (the Workbench stops engines first, then the
controller); ``Cluster.delay`` adds 1 s between controller and engines in ``ipcluster`` (0 here).
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

ROOT = Path(__file__).resolve().parent.parent


def time_defaults(n: int) -> tuple[float, float]:
    import ipyparallel as ipp
    from traitlets.config import Config

    from mpiworkbench.core.launch import world_launch

    config = Config()
    config.MPILauncher.mpi_cmd = list(world_launch().mpiexec)  # only so mpiexec is found; otherwise defaults
    t0 = time.perf_counter()
    cluster = ipp.Cluster(engines="mpi", n=n, config=config, cluster_id=f"bench-default-{time.time_ns()}")
    client = cluster.start_and_connect_sync()
    client[:].apply_sync(os.getpid)
    t1 = time.perf_counter()
    client.close()
    cluster.stop_cluster_sync()
    stopped = time.perf_counter()
    from mpiworkbench.client.cluster.watchdog import engine_state_file

    engine_state_file(cluster.profile_dir, cluster.cluster_id).unlink(missing_ok=True)  # ipyparallel leaves it
    return t1 - t0, stopped - t1


def time_workbench(n: int) -> tuple[float, float]:
    from mpiworkbench import Workbench

    t0 = time.perf_counter()
    wb = Workbench(n=n, oversubscribe=True).start()
    wb.view.apply_sync(os.getpid)
    t1 = time.perf_counter()
    wb.stop()
    return t1 - t0, time.perf_counter() - t1


def _ipcluster(n: int, ipython_dir: str) -> subprocess.Popen:
    """``ipcluster start`` of our ``mpi`` profile; returns once its engines answer."""
    from mpiworkbench.client.cluster import attach
    from mpiworkbench.client.cluster.profiles import create_profile

    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    server = subprocess.Popen([str(Path(sys.executable).with_name("ipcluster")), "start", "-n", str(n), "--profile=mpi"],
                              cwd=ipython_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        cluster = attach.running_cluster("mpi")
        if cluster is not None and cluster.engines:
            client = cluster.connect_client_sync()
            client.wait_for_engines(n, timeout=120)
            client.close()
            return server
        time.sleep(0.1)  # polling for the cluster file
    server.kill()
    raise TimeoutError("ipcluster did not come up in 120 s")


def time_attach_ipyparallel(n: int) -> float:
    import ipyparallel as ipp

    t0 = time.perf_counter()
    cluster = ipp.Cluster.from_file(profile="mpi", cluster_id="")
    client = cluster.connect_client_sync()
    client.wait_for_engines(n, timeout=60)
    client[:].apply_sync(os.getpid)
    elapsed = time.perf_counter() - t0
    client.close()
    return elapsed


def time_attach_workbench(n: int) -> float:
    from mpiworkbench import Workbench

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


# ---------------------------------------------------------------------- sweep and phases
#: Engine-side stamps: a ``sitecustomize`` on the engines' PYTHONPATH records when the
#: interpreter started and when each watched import began and ended (``mpi4py.MPI``'s import
#: is ``MPI_Init``); :func:`_engine_stamps` reads them back. Measurement only.
_SITECUSTOMIZE = '''
import builtins, sys, time
_stamps = {"interpreter": time.time()}
builtins._wbbench_stamps = _stamps
_WATCHED = {"ipyparallel": "import ipyparallel", "ipyparallel.engine.app": "import engine app",
            "mpi4py.MPI": "MPI_Init"}
class _Stamper:
    busy = set()
    def find_spec(self, name, path=None, target=None):
        if name not in _WATCHED or name in self.busy:
            return None
        import importlib.util
        self.busy.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None:
            return None
        inner, label = spec.loader, _WATCHED[name]
        class Loader:
            def create_module(self, spec):
                return inner.create_module(spec)
            def exec_module(self, module):
                began = time.time()
                try:
                    inner.exec_module(module)
                finally:
                    _stamps[label] = (began, time.time())
        spec.loader = Loader()
        return spec
sys.meta_path.insert(0, _Stamper())
'''


def _engine_stamps() -> dict:
    """On an engine: its stamps (epoch seconds), with the rank process's creation time.

    The creation time comes from the process's start in clock ticks since boot and
    ``/proc/uptime`` (10 ms steps), not ``psutil``'s ``create_time``: that adds the boot time,
    which Linux gives in whole seconds, and was up to a second off."""
    import builtins
    import os
    import time

    with open("/proc/self/stat") as f:
        stat = f.read()
    start_ticks = int(stat[stat.rfind(")") + 2:].split()[19])  # field 22, starttime
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    created = time.time() - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    return {"created": created, **getattr(builtins, "_wbbench_stamps", {})}


def _marking(marks: dict, owner, name: str, label: str) -> None:
    """Wrap *owner.name* so that its first call's start and end land in *marks* (epoch s)."""
    import inspect

    original = getattr(owner, name)
    if inspect.iscoroutinefunction(original):
        async def wrapper(*args, **kwargs):
            marks.setdefault(label + " >", time.time())
            try:
                return await original(*args, **kwargs)
            finally:
                marks.setdefault(label + " <", time.time())
    else:
        def wrapper(*args, **kwargs):
            marks.setdefault(label + " >", time.time())
            try:
                return original(*args, **kwargs)
            finally:
                marks.setdefault(label + " <", time.time())
    setattr(owner, name, wrapper)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def one_start(n: int, px_repeats: int) -> dict:
    """In a fresh process: start a Workbench of *n* engines, its phases, attach, ``%%px``, stop."""
    import ipyparallel as ipp
    from IPython.core.interactiveshell import InteractiveShell

    from mpiworkbench.client.calls import session
    from mpiworkbench.client.cluster import engines

    marks: dict[str, float] = {}
    _marking(marks, ipp.Cluster, "start_controller", "controller spawned")
    _marking(marks, ipp.Cluster, "start_engines", "engines launched")
    _marking(marks, ipp.Cluster, "connect_client", "client connected")
    _marking(marks, ipp.Client, "wait_for_engines", "engines registered")
    _marking(marks, engines, "rank_map", "rank map")
    _marking(marks, session.Session, "_take_engine_set", "view and %px")
    shell = InteractiveShell.instance()  # so that %px is activated, as in a notebook
    from mpiworkbench import Workbench

    t0 = time.time()
    wb = Workbench(n=n, oversubscribe=True).start()
    ready = time.time()
    try:
        stamps = wb.view.apply_sync(_engine_stamps)
        t = time.perf_counter()
        wb.run(os.getpid)  # the first call arms the hang report on every engine
        first_call = time.perf_counter() - t
        cell = "from mpi4py import MPI\n_wbbench = MPI.COMM_WORLD.allreduce(1)"
        # the same cell through %%px, and ipyparallel's own round trips without the workbench:
        # the cell by a bare execute, and a no-op apply (the floor of any call on all engines)
        ways = {"px": lambda: shell.run_cell_magic("px", "", cell),
                "bare_execute": lambda: wb.view.execute(cell, block=True),
                "bare_apply": lambda: wb.view.apply_sync(int)}
        trips: dict[str, list[float]] = {name: [] for name in ways}
        for i in range(px_repeats + 1):  # alternated; the first of each is a warm-up
            for name, way in ways.items():
                t = time.perf_counter()
                way()
                if i:
                    trips[name].append(time.perf_counter() - t)
        t = time.perf_counter()
        other = Workbench.attach(profile="default", cluster_id=wb.cluster_id, activate=False)
        other.run(os.getpid)
        attach = time.perf_counter() - t
        other.stop()  # detaches
    finally:
        t = time.perf_counter()
        wb.stop()
        stop = time.perf_counter() - t
    phases = _phases(t0, ready, marks, stamps)
    return {"n": n, "ready_s": ready - t0, "phases": phases, "first_call_s": first_call,
            "px_s": statistics.median(trips["px"]), "bare_execute_s": statistics.median(trips["bare_execute"]),
            "bare_apply_s": statistics.median(trips["bare_apply"]), "attach_s": attach, "stop_s": stop}


def _phases(t0: float, ready: float, marks: dict, stamps: list[dict]) -> dict:
    """Seconds per phase of a start, in order; engine-side phases end when the last rank's does."""
    def last(label, end=1):
        values = [s[label][end] if isinstance(s.get(label), (list, tuple)) else s.get(label) for s in stamps]
        values = [v for v in values if v is not None]
        return max(values) if values else None

    def span(a, b):
        return None if a is None or b is None else max(0.0, b - a)

    created = min(s["created"] for s in stamps)
    engine_app = last("import engine app") or last("import ipyparallel")
    mpi_init = last("MPI_Init")
    registered = marks.get("engines registered <")
    return {
        "cluster object, interposer (client)": span(t0, marks.get("controller spawned >")),
        "controller process spawned": span(marks.get("controller spawned >"), marks.get("controller spawned <")),
        "until mpiexec's ranks exist": span(marks.get("controller spawned <"), created),
        "rank interpreters start (last rank)": span(created, last("interpreter", 0)),
        "engine imports (ipyparallel, last rank)": span(last("interpreter", 0), engine_app),
        "MPI_Init (last rank)": span(engine_app, mpi_init),
        "registration: nanny, kernel, heartbeat": span(mpi_init, registered),
        "rank map (one apply)": span(registered, marks.get("rank map <")),
        "view and %px": span(marks.get("rank map <"), ready),
        "(controller up: client connected)": span(t0, marks.get("client connected <")),
    }


def _child(tree: Path, site: Path, n: int, px_repeats: int) -> dict:
    """:func:`one_start` in a fresh process whose ``mpiworkbench`` is *tree*'s."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(tree)])
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", str(n), "--px-repeats", str(px_repeats)],
                         cwd=str(tree), env=env, capture_output=True, text=True, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"a {n}-engine start with {tree} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    return json.loads(lines[-1])


def sweep(counts: list[int], repeats: int, baseline: str | None, px_repeats: int) -> dict:
    trees = {"new": ROOT}
    worktree = None
    with tempfile.TemporaryDirectory(prefix="mpiwb-stamps-") as site:
        Path(site, "sitecustomize.py").write_text(_SITECUSTOMIZE)
        try:
            if baseline:
                worktree = Path(tempfile.mkdtemp(prefix="mpiwb-baseline-"))
                subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), baseline],
                               check=True, capture_output=True)
                trees = {"old": worktree, "new": ROOT}
            runs: dict[str, dict[int, list[dict]]] = {name: {n: [] for n in counts} for name in trees}
            for _ in range(repeats):
                for n in counts:
                    for name, tree in trees.items():  # alternately: old, new, old, new …
                        try:
                            runs[name][n].append(_child(tree, Path(site), n, px_repeats))
                        except RuntimeError as exc:  # counted and said, not hidden
                            print(f"FAILED: {exc}", file=sys.stderr)
                            runs[name][n].append({"n": n, "failed": str(exc)[-3000:]})
        finally:
            if worktree is not None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)],
                               capture_output=True)
    return runs


def _summary(results: list[dict]) -> dict:
    failed = sum("failed" in r for r in results)
    results = [r for r in results if "failed" not in r]
    keys = ("ready_s", "first_call_s", "px_s", "bare_execute_s", "bare_apply_s", "attach_s", "stop_s")
    if not results:
        raise RuntimeError(f"every start failed ({failed}): nothing to summarise")
    out = {k: _median(r[k] for r in results) for k in keys}
    out["phases"] = {p: _median(r["phases"][p] for r in results) for p in results[0]["phases"]}
    out["failed_starts"] = failed
    return out


def report_sweep(runs: dict, counts: list[int]) -> dict:
    summary = {name: {n: _summary(by_n[n]) for n in counts} for name, by_n in runs.items()}
    names = list(summary)
    print(f"\nWorkbench(n).start() → ready, medians of {len(runs[names[0]][counts[0]])} alternating starts per code")
    header = f"{'n':>3} " + " ".join(f"{name + ' ' + k:>13}" for name in names for k in ("ready", "attach", "%%px ms", "stop"))
    print(header)
    for n in counts:
        cells = []
        for name in names:
            s = summary[name][n]
            cells += [f"{s['ready_s']:13.2f}", f"{s['attach_s']:13.3f}", f"{s['px_s'] * 1e3:13.1f}", f"{s['stop_s']:13.2f}"]
        print(f"{n:>3} " + " ".join(cells))
    for name in names:
        first, lastn = counts[0], counts[-1]
        if lastn > first:
            per = (summary[name][lastn]["ready_s"] - summary[name][first]["ready_s"]) / (lastn - first)
            px = summary[name][lastn]["px_s"] / summary[name][first]["px_s"]
            at = summary[name][lastn]["attach_s"] / summary[name][first]["attach_s"]
            bare = {k: summary[name][lastn][k] / summary[name][first][k] for k in ("bare_execute_s", "bare_apply_s")}
            print(f"{name}: {per:.2f} s per extra engine ({first}→{lastn}); at {lastn} vs {first} engines: "
                  f"%%px ×{px:.2f}, attach ×{at:.2f}; ipyparallel alone: the cell ×{bare['bare_execute_s']:.2f}, "
                  f"a no-op apply ×{bare['bare_apply_s']:.2f}")
    print("round trips (ms): %%px / the same cell by a bare view.execute / a no-op view.apply_sync")
    for n in counts:
        print(f"{n:>3} " + "   ".join(
            f"{name} " + " / ".join(f"{summary[name][n][k] * 1e3:.1f}" for k in ("px_s", "bare_execute_s", "bare_apply_s"))
            for name in names))
    for name in names:
        for n in counts:
            if summary[name][n]["failed_starts"]:
                print(f"{name}: {summary[name][n]['failed_starts']} start(s) of {n} engines FAILED (see stderr)")
    if "old" in summary:
        print("ratio new/old (same run):")
        for n in counts:
            o, w = summary["old"][n], summary["new"][n]
            print(f"  n={n:<3} ready {w['ready_s'] / o['ready_s']:.2f}  attach {w['attach_s'] / o['attach_s']:.2f}  "
                  f"%%px {w['px_s'] / o['px_s']:.2f}  stop {w['stop_s'] / o['stop_s']:.2f}")
    for n in sorted({counts[0], counts[-1]}):
        print(f"\nphases of a start at n={n} (s; engine-side: until the last rank)")
        print(f"{'phase':42} " + " ".join(f"{name:>8}" for name in names))
        for phase in summary[names[0]][n]["phases"]:
            print(f"{phase:42} " + " ".join(
                f"{summary[name][n]['phases'][phase]:8.2f}" if summary[name][n]['phases'][phase] is not None else f"{'-':>8}"
                for name in names))
        print(f"{'ready':42} " + " ".join(f"{summary[name][n]['ready_s']:8.2f}" for name in names))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--attach-repeats", type=int, default=None,
                        help="0 skips the ipcluster attach measurement (default 9, 0 with --sweep)")
    parser.add_argument("--sweep", default=None, help="rank counts, e.g. 2,4,8,16: the sweep and phases")
    parser.add_argument("--baseline", default=None, help="a commit to measure alternately (git worktree)")
    parser.add_argument("--px-repeats", type=int, default=5, help="%%px round trips per start")
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_start(args.one, args.px_repeats)))
        return
    load_before = os.getloadavg()[0]
    result: dict = {"load_average_before": load_before}
    if args.sweep:
        counts = [int(c) for c in args.sweep.split(",")]
        print(f"rank sweep {counts}, {args.repeats} repeats, load average before: {load_before:.2f}")
        runs = sweep(counts, args.repeats, args.baseline, args.px_repeats)
        result.update(sweep={"counts": counts, "baseline": args.baseline, "runs": runs,
                             "summary": report_sweep(runs, counts)})
        result["load_average_after"] = os.getloadavg()[0]
        print(f"load average after: {result['load_average_after']:.2f}")
    else:
        runs = {"ipyparallel defaults": [], "Workbench": []}
        for _ in range(args.repeats):
            runs["ipyparallel defaults"].append(time_defaults(args.n))
            runs["Workbench"].append(time_workbench(args.n))
        print(f"{args.n} engines, {args.repeats} alternating runs, load average before: {load_before:.2f}")
        print(f"{'':22} {'start→ready (s)':>16} {'stop (s)':>10}")
        for name, values in runs.items():
            start = statistics.median(v[0] for v in values)
            stop = statistics.median(v[1] for v in values)
            result[name] = {"start_s": start, "stop_s": stop, "runs": values}
            print(f"{name:22} {start:16.2f} {stop:10.2f}")
        ours, theirs = result["Workbench"], result["ipyparallel defaults"]
        print(f"ratio Workbench/defaults: start {ours['start_s'] / theirs['start_s']:.2f}, "
              f"stop {ours['stop_s'] / theirs['stop_s']:.2f}")
    attach_repeats = args.attach_repeats if args.attach_repeats is not None else (0 if args.sweep else 9)
    if attach_repeats:
        attach = measure_attach(args.n, attach_repeats)
        print(f"attach to a running {args.n}-engine `mpi` cluster (ipcluster), medians of {attach_repeats}:")
        for name, values in attach.items():
            print(f"  {name:34} {values['median_s']:.3f} s")
        ratio = attach["Workbench.attach"]["median_s"] / attach["ipyparallel from_file + connect"]["median_s"]
        print(f"  ratio Workbench.attach / ipyparallel: {ratio:.2f}")
        result["attach"] = attach
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": args.n, **result}, f, indent=2, default=str)


if __name__ == "__main__":
    main()
