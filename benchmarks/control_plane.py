"""The control plane's cost per call as the world grows: the old path (a DirectView: n requests,
n replies, each engine's IOPub), the controller's broadcast with coalescing replies (one request,
one reply of n results) and the relay (:mod:`mpiworkbench.client.ranks.relay`: one request to rank 0,
which hands the call to the other ranks, one reply), alternated in one run.

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/control_plane.py --sweep 2,8,16,32,64 --calls 20 [--json FILE]
    .venv/bin/python benchmarks/control_plane.py --sweep "" --threads 2,64 --calls 200

For each world size it starts one ``Workbench(n, oversubscribe=True)`` and measures, per call and
for each path, alternately in rounds of ``--calls`` calls (each round begun by another path; a
round starts once no message has come in for 0.3 s and ends once its own late messages are in,
the client's idle CPU during that wait subtracted, so that the ``DirectView``'s late IOPub is
counted with it, not with the path that follows it). The smallest world of the sweep is started
first and kept: every other size's rounds alternate with the same rounds on it, and the ratio of
client CPU (larger / smallest) is the median of the rounds' ratios, so that the machine's load,
which changes from minute to minute on a shared machine, falls on both sides of each ratio alike:

* ``wb.run`` of a no-op function (old: ``view.apply_async`` on the DirectView through the same
  world turn and waits; coalescing: ``coalescing.apply_async`` on the
  controller's coalescing broadcast view, the same way; new: ``wb.run``, the relay; and the
  floor, a call of the same function on rank 0's engine alone, the same way: what a call costs
  the notebook when nothing in it is per rank);
* a ``%%px`` cell of one statement through an IPython shell (old: ``%%px --no-stream --direct``;
  new: ``%%px --no-stream --broadcast``, the relay, the default above 8 ranks);
* client CPU: this process's CPU clock (``time.process_time``: every thread, so ipyparallel's I/O
  thread too); controller CPU: the controller process and its children (the schedulers)
  (from ``/proc``, ``core.processes.cpu_seconds``); messages: what the client's session sent (``Session.send``) and took in
  (``Session.feed_identities``: replies, IOPub, notifications); wall: the median round trip.

``--against REV`` (a change to the runtime against the code before it): for each size of
``--sweep``, two worlds side by side, one driven by this checkout's ``mpiworkbench`` and one by
REV's (``git archive``; the same venv), each from a process of its own; rounds of ``--calls``
calls of ``wb.run`` of a no-op alternate between them (each round begun by the other side than
the last), after one round each to warm up; the ratio of client CPU per call (this / REV) is the
median of the rounds' ratios::

    .venv/bin/python benchmarks/control_plane.py --against HEAD~1 --sweep 2,64 --calls 200 --rounds 5

``--threads`` (where the client's CPU per ``wb.run`` goes): for each world size, one start and
``--calls`` calls of ``wb.run`` of a no-op; the CPU per call of each thread of this process (from
``/proc/self/task/*/stat``: the calling thread, ipyparallel's I/O thread, libzmq's). Linux only.

The machine has 2 cores: beyond 2 engines every figure is oversubscribed (MPICH ranks busy-poll
while they wait, which mostly hits the wall-clock round trip); compare the paths within a row.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def noop() -> None:
    return None


CELL = "x = 1"


def idle_cpu_ms_per_s(counter, seconds: float = 2.0) -> float:
    """The client's CPU per second while no call runs (its threads' own upkeep), measured once a
    world is up: what each round's quiet wait costs besides the calls, subtracted from it."""
    counter.wait_quiet()
    cpu, t0 = time.process_time(), time.monotonic()
    time.sleep(seconds)  # measurement only: the idle rate
    return (time.process_time() - cpu) / (time.monotonic() - t0) * 1e3


def measure(controller: list[int], counter, call, calls: int, idle_ms_per_s: float) -> dict:
    """One round of *calls* calls: it starts once nothing has come in for a while and ends
    once the round's own late messages (a DirectView's idle statuses) are in, so that no path's
    traffic is counted in the next path's round; the idle CPU of that wait is subtracted.
    *controller*: the pids of the controller's processes (``core.processes.family``)."""
    from mpiworkbench.core.processes import cpu_seconds

    counter.wait_quiet()
    sent, received = counter.sent, counter.received
    cpu, ctl = time.process_time(), cpu_seconds(controller)
    walls = []
    for _ in range(calls):
        t = time.perf_counter()
        call()
        walls.append(time.perf_counter() - t)
    calls_end = time.monotonic()
    if not counter.wait_quiet():
        print("warning: messages still coming in 30 s after a round", file=sys.stderr)
    idle_ms = (time.monotonic() - calls_end) * idle_ms_per_s
    return {"client_cpu_ms": ((time.process_time() - cpu) * 1e3 - idle_ms) / calls,
            "controller_cpu_ms": (cpu_seconds(controller) - ctl) / calls * 1e3,
            "sent": (counter.sent - sent) / calls, "received": (counter.received - received) / calls,
            "wall_ms": statistics.median(walls) * 1e3}


def paths(wb, shell):
    """Path name → one call of it on *wb*'s world (``%%px`` through *shell*, on *wb*'s magics)."""
    from mpiworkbench.client.ranks import relay

    def run_old():  # what wb.run did before: the DirectView, through the same world turn and waits
        call = wb.submit("bench: DirectView run", lambda: wb.view.apply_async(noop))
        wb.wait_explained(call, wb.timeout)
        return list(call.ar.get())

    def px_old():
        result = shell.run_cell(f"%%px --no-stream --direct\n{CELL}")
        assert result.success, result.error_in_exec

    def px_new():
        result = shell.run_cell(f"%%px --no-stream --broadcast\n{CELL}")
        assert result.success, result.error_in_exec

    coalescing = wb.client.broadcast_view(targets=list(wb.view.targets), is_coalescing=True)

    def run_coalescing():  # the controller's broadcast with coalescing replies (wb.run's path before the relay)
        call = wb.submit("bench: coalescing run", lambda _relay: coalescing.apply_async(relay.call, noop, (), {}),
                         relayed=True)  # (one reply for every rank, as a relayed call's)
        return wb.gather(call)

    one = wb.client[wb.engine_of(0)]

    def run_one():  # the floor: a call to rank 0's engine alone, what the relay costs the notebook at most
        call = wb.submit("bench: one engine", lambda: one.apply_async(noop))
        wb.wait_explained(call, wb.timeout)
        return call.ar.get()

    return {"wb.run old (DirectView)": run_old, "wb.run coalescing (controller)": run_coalescing,
            "wb.run new (relay)": lambda: wb.run(noop), "one engine (rank 0 only)": run_one,
            "%%px old (DirectView)": px_old, "%%px new (relay)": px_new}


class World:
    """One started world of the sweep: its workbench, message counter, paths and idle CPU."""

    def __init__(self, n: int, shell):
        from mpiworkbench import Workbench
        from mpiworkbench.client.calls import relayed
        from mpiworkbench.core.processes import family

        self.shell = shell
        self.wb = Workbench(n=n, oversubscribe=True, timeout=600).start()
        self.counter = relayed.MessageCounter(self.wb.client.session)
        self.controller = family(self.wb.cluster.controller.process.pid)  # its schedulers, heart monitor: found once
        self.calls = paths(self.wb, shell)
        self.use()
        for call in self.calls.values():  # warm-up: imports, pickling caches, the engines' first apply
            for _ in range(3):
                call()
        self.idle = idle_cpu_ms_per_s(self.counter)
        print(f"{n} engines: the client's idle CPU {self.idle:.2f} ms/s", file=sys.stderr, flush=True)

    def use(self) -> None:
        """Make ``%%px`` this world's (each workbench registers its magics when it starts)."""
        self.shell.magics_manager.register(self.wb._magics)

    def measure(self, name: str, calls: int) -> dict:
        self.use()
        return measure(self.controller, self.counter, self.calls[name], calls, self.idle)

    def stop(self) -> None:
        self.wb.stop()


def sweep_point(world: World, reference: World | None, calls: int, rounds: int) -> dict:
    """Rounds of *calls* calls of every path on *world*, alternated with the same on *reference*
    (the smallest world, kept running through the sweep) when given: the ratio of the two in each
    round is what the machine's changing load (other work, CPU frequency) falls on alike. Path
    name → medians over the rounds, with ``reference_cpu_ms`` and ``ratio`` (of the client CPU)."""
    names = list(world.calls)
    steps = [(world, name) for name in names] + ([(reference, name) for name in names] if reference else [])
    found: dict[tuple[int, str], list[dict]] = {}
    for r in range(rounds):  # alternated, each round begun by another step
        for who, name in steps[r % len(steps):] + steps[:r % len(steps)]:
            found.setdefault((id(who), name), []).append(who.measure(name, calls))
    point = {}
    for name in names:
        runs = found[(id(world), name)]
        point[name] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        if reference:
            ref = [run["client_cpu_ms"] for run in found[(id(reference), name)]]
            point[name]["reference_cpu_ms"] = statistics.median(ref)
            point[name]["ratio"] = statistics.median(run["client_cpu_ms"] / same for run, same in zip(runs, ref))
        else:
            point[name]["reference_cpu_ms"], point[name]["ratio"] = point[name]["client_cpu_ms"], 1.0
    return point


def sweep(sizes: list[int], calls: int, rounds: int) -> dict:
    """Every size of *sizes* against the smallest (started first and kept until the end)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    smallest, results = min(sizes), {}
    reference = World(smallest, shell)
    try:
        for n in sizes:
            if n == smallest:
                results[n] = sweep_point(reference, None, calls, rounds)
            else:
                world = World(n, shell)
                try:
                    results[n] = sweep_point(world, reference, calls, rounds)
                finally:
                    world.stop()
            print(f"{n} engines done", file=sys.stderr, flush=True)
    finally:
        reference.stop()
        InteractiveShell.clear_instance()
    return results


def table(results: dict) -> str:
    head = ("| engines | path | client CPU ms/call | the smallest world's, same rounds | ratio | "
            "controller CPU ms/call | msgs out/call | msgs in/call | wall ms (oversubscribed > 2) |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for n, point in results.items():
        for name, r in point.items():
            lines.append(f"| {n} | {name} | {r['client_cpu_ms']:.2f} | {r['reference_cpu_ms']:.2f} | {r['ratio']:.2f} | "
                         f"{r['controller_cpu_ms']:.2f} | {r['sent']:.1f} | {r['received']:.1f} | {r['wall_ms']:.1f} |")
    return "\n".join(lines)


def _thread_cpu_s() -> dict[int, float]:
    """Each thread of this process (by its native id) → its CPU seconds so far."""
    import os

    tick, found = os.sysconf("SC_CLK_TCK"), {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # (a thread that ended meanwhile)
            continue
        found[int(tid)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return found


def threads_point(n: int, calls: int) -> dict[str, float]:
    """Thread name → its CPU ms per ``wb.run`` at *n* engines (threads above 0.01 ms)."""
    import threading

    from mpiworkbench import Workbench

    wb = Workbench(n=n, oversubscribe=True, timeout=600, activate=False).start()
    try:
        for _ in range(5):
            wb.run(noop)  # warm-up
        before = _thread_cpu_s()
        for _ in range(calls):
            wb.run(noop)
        after = _thread_cpu_s()
        names = {t.native_id: t.name for t in threading.enumerate()}
        names[threading.main_thread().native_id] = "calling thread"
        io_thread = getattr(wb.client, "_io_thread", None)  # (ipyparallel's, private)
        if io_thread is not None:
            names[io_thread.native_id] = "ipyparallel's I/O thread"
    finally:
        wb.stop()
    per_call = {}
    for tid, cpu in after.items():
        ms = (cpu - before.get(tid, 0.0)) / calls * 1e3
        if ms > 0.01:
            name = names.get(tid) or "libzmq or other native thread"
            per_call[name] = per_call.get(name, 0.0) + ms
    return per_call


#: What each side of ``--against`` runs: its own world, then rounds of ``wb.run`` on request (a
#: line with the number of calls; 0 ends it), a JSON line back for each.
SIDE = """
import json, statistics, sys, time
import mpiworkbench
from mpiworkbench import Workbench

def noop():
    return None

with Workbench(int(sys.argv[1]), oversubscribe=True, activate=False) as wb:
    print(json.dumps({"package": mpiworkbench.__file__}), flush=True)
    for line in sys.stdin:
        calls = int(line)
        if not calls:
            break
        walls, cpu = [], time.process_time()
        for _ in range(calls):
            t = time.perf_counter()
            wb.run(noop)
            walls.append(time.perf_counter() - t)
        print(json.dumps({"client_cpu_ms": (time.process_time() - cpu) * 1e3 / calls,
                          "wall_ms": statistics.median(walls) * 1e3}), flush=True)
"""


def against(rev: str, sizes: list[int], calls: int, rounds: int) -> dict:
    """World size → each side's median client CPU and wall per ``wb.run`` and the median of the
    rounds' ratios (this checkout / *rev*); see the module's docstring."""
    results = {}
    with tempfile.TemporaryDirectory(prefix="control-plane-") as tmp:
        trees = {rev: Path(tmp) / "previous", "this checkout": ROOT}
        trees[rev].mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "mpiworkbench"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(trees[rev])], input=archive.stdout, check=True)
        for n in sizes:
            sides = {}
            try:
                for name, tree in trees.items():
                    sides[name] = subprocess.Popen([sys.executable, "-c", SIDE, str(n)], cwd=tmp, text=True,
                                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                   env={**os.environ, "PYTHONPATH": str(tree)})
                for name, side in sides.items():
                    package = json.loads(side.stdout.readline())["package"]
                    if not package.startswith(str(trees[name])):
                        raise RuntimeError(f"the side of {name} imported {package}, not its own tree {trees[name]}")

                def one_round(name: str) -> dict:
                    sides[name].stdin.write(f"{calls}\n")
                    sides[name].stdin.flush()
                    return json.loads(sides[name].stdout.readline())

                for name in sides:
                    one_round(name)  # warm-up: the relay opened, the engines armed
                measured = {name: [] for name in sides}
                for r in range(rounds):
                    for name in (list(sides) if r % 2 == 0 else list(sides)[::-1]):
                        measured[name].append(one_round(name))
            finally:
                for side in sides.values():
                    with contextlib.suppress(OSError, ValueError):
                        side.stdin.write("0\n")
                        side.stdin.close()
                for side in sides.values():
                    try:
                        side.wait(timeout=300)
                    except subprocess.TimeoutExpired:
                        side.terminate()
                        side.wait(timeout=60)
            before, now = measured[rev], measured["this checkout"]
            results[n] = {
                **{f"{name} client CPU ms": statistics.median(m["client_cpu_ms"] for m in measured[name]) for name in sides},
                **{f"{name} wall ms": statistics.median(m["wall_ms"] for m in measured[name]) for name in sides},
                "ratio": statistics.median(b["client_cpu_ms"] / a["client_cpu_ms"] for a, b in zip(before, now)),
            }
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sweep", default="2,8,16,32,64", help="world sizes (comma separated)")
    parser.add_argument("--calls", type=int, default=20, help="calls per measured round")
    parser.add_argument("--rounds", type=int, default=3, help="alternated rounds per path (medians)")
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--threads", default="", help="world sizes (comma separated): CPU per wb.run by thread")
    parser.add_argument("--against", metavar="REV", help="wb.run's client CPU per call: this checkout against the "
                        "commit REV, in one run (the sizes of --sweep)")
    args = parser.parse_args(argv)
    if args.against:
        found = against(args.against, [int(x) for x in args.sweep.split(",")], args.calls, args.rounds)
        for n, row in found.items():
            print(f"{n} engines: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items() if k != "ratio")
                  + f"; client CPU per call, this checkout / {args.against} = {row['ratio']:.2f}x (median of the rounds' ratios)")
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=1))
        return 0
    for n in (int(x) for x in args.threads.split(",") if x):
        for name, ms in sorted(threads_point(n, args.calls).items(), key=lambda item: -item[1]):
            print(f"| {n} | {name} | {ms:.2f} |")
    if not args.sweep:
        return 0
    results = sweep([int(x) for x in args.sweep.split(",")], args.calls, args.rounds)
    print(table(results))
    first, last = min(results), max(results)
    for name in results[last]:
        print(f"client CPU per call, {name}: {last} engines / {first} engines = {results[last][name]['ratio']:.2f}x "
              f"(median of the rounds' ratios)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
