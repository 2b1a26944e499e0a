"""Live panels at video rate: where a frame of **Play** goes, against the same steps without a panel.

For each case (wave 33³/65³/129³, CG 257²/1025², heat 256²) on one 2-rank workbench, the
panel's own Play loop (:meth:`mpiworkbench.widgets.live.LivePanel.play_frames`, what the
button runs, without a browser) plays ``--frames`` frames after ``--warmup`` frames (the
steps per frame settle), ``--repeat`` times. Per frame it records the slowest rank's
compute and MPI exchange, the transfer (the round trip's rest: submit, gather, pull), the
drawing (in-place redraw, PNG encoding, setting the widgets) and the total; then, in the
same run:

* **no panel** — the same step counts, frame by frame, through the handle's plain
  ``step``/``iterate`` (no picture gathered, nothing drawn): what the solver costs alone;
* **old redraw** — the figures drawn from scratch and encoded by ``savefig``, as every
  frame did before the panels redrew in place (same data, a few frames).

The headline figure, **beyond the solver**, is the median of each frame's period (from one
frame drawn to the next) minus the slowest rank's compute and exchange: gather, transfer and
drawing as a viewer experiences them. Since Play starts the next frame on the engines before
it draws the last one, transfer and drawing overlap, and the frame period is less than their
sum plus the compute.

It also measures the CPU the notebook kernel (this process), the controller and the
engines use while Play runs (cores busy), and with ``--yield`` repeats the three headline
cases on a second cluster whose ranks yield their core while they wait in MPI (the
workbench's :data:`mpiworkbench.core.launch.YIELD_WHILE_WAITING`, set here in the
environment the engines inherit).

Medians over all recorded frames of all repeats; the load average is printed (the machine
is shared: read ratios from one run, not absolute times across runs). Usage::

    .venv/bin/python benchmarks/interactive.py [--quick] [--frames 60] [--repeat 3] [--yield] [--ordering] [--json FILE]

``--ordering`` plays every case a second time, right after, without the shared MPI world's turn
(:mod:`mpiworkbench.client.calls.turns`): what ordering every call across notebooks costs a panel.

``--sweep`` measures instead the mesh sweep of issue 24 (wave 33³…257³, CG 257²…4097²): per case,
Play with the picture reduced on the ranks to the pixels the panel draws
(:mod:`mpiworkbench.solvers.picture`) against Play pulling the whole picture every frame
(``resolution=None``, the code path before), each on its own solver, five frames of one then five
of the other (a shared machine's load falls on both alike): bytes per frame, beyond the solver,
frames/s, and their ratios::

    .venv/bin/python benchmarks/interactive.py --sweep [--sweep-frames 20] [--kernel c] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

#: (solver, size) of every case; the first three are the issue's headline cases.
CASES = [("wave", 65), ("cg", 257), ("heat", 256), ("wave", 33), ("wave", 129), ("cg", 1025)]
QUICK = CASES[:3]


#: The mesh sweep of ``--sweep`` (issue 24): bytes per frame and time beyond the solver must not grow.
SWEEP = [("wave", 33), ("wave", 65), ("wave", 129), ("wave", 257),
         ("cg", 257), ("cg", 1025), ("cg", 2049), ("cg", 4097)]


def make_handle(wb, solver: str, size: int, kernel: str = "numpy"):
    """The case's handle, with options that keep it running through every frame."""
    if solver == "wave":
        return wb.wave(mesh=size, kernel=kernel)
    if solver == "cg":  # an unreachable tolerance: it iterates on at machine precision
        return wb.cg(mesh=size, tol=1e-300, maxiter=10**7)
    return wb.heat(shape=(size, size), tol=1e-12)


def play(panel, handle, n: int) -> tuple[int, float]:
    """*n* frames of *panel*'s Play loop, its solve started again whenever it has finished (a
    CG iterating on at machine precision reaches ρ = 0, "converged", after some thousand
    iterations: a few dozen frames at 257², where a frame takes 50-180 of them); returns the
    frames played and the seconds they took (the restarts left out)."""
    done, wall = 0, 0.0
    while done < n:
        if getattr(handle, "finished", False):
            handle.reset()
        t0 = time.perf_counter()
        played = panel.play_frames(lambda: False, max_frames=n - done)
        wall += time.perf_counter() - t0
        done += played
        if not played and not getattr(handle, "finished", False):
            break  # stopped for another reason: counted short, and said by the caller
    return done, wall


def plain_steps(handle, k: int) -> None:
    """*k* steps through the handle without a panel (no picture gathered, nothing drawn)."""
    (handle.iterate if hasattr(handle, "iterate") else handle.step)(k)


def old_redraw_s(handle, solver: str, frames: int = 3) -> float:
    """Median seconds to draw the panel's figures from scratch and encode them with
    ``savefig`` (what every frame cost before the panels redrew in place)."""
    from mpiworkbench.plot import cg as cg_plot, heat as heat_plot, wave as wave_plot
    from mpiworkbench.plot.render import figure_to_png

    times = []
    for _ in range(frames):
        t0 = time.perf_counter()
        if solver == "wave":
            plane = handle.slice("z")
            figure_to_png(wave_plot.slice_figure(plane, "z", handle.mesh[2] // 2, handle.layout, t=handle.t), dpi=80)
            figure_to_png(wave_plot.error_figure(handle.times, handle.errors, width=4.0), dpi=70)
            figure_to_png(wave_plot.timings_figure(handle.last_timings, width=4.0), dpi=70)
        elif solver == "cg":
            u = handle.solution()
            figure_to_png(cg_plot.residual_figure(handle.residuals, handle.rho_ratios, tol=handle.tol), dpi=80)
            figure_to_png(cg_plot.solution_error_figure(u, u - handle.exact(), handle.layout,
                                                        iteration=handle.iterations), dpi=80)
            figure_to_png(cg_plot.timings_figure(handle.last_timings), dpi=80)
        else:
            field = handle.field()
            figure_to_png(heat_plot.field_figure(field, handle.rows), dpi=80)
            figure_to_png(heat_plot.history_figure(handle.history_steps, handle.deltas, handle.errors, handle.tol),
                          dpi=70)
            figure_to_png(heat_plot.timings_figure(handle.last_timings, handle.steps), dpi=70)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def processes(wb):
    """psutil handles on the kernel (this process), the controller and the engines."""
    import psutil

    engines = [psutil.Process(r["pid"]) for r in wb.info()]
    controller = getattr(getattr(wb.cluster, "controller", None), "pid", None)
    return {"kernel": [psutil.Process()], "controller": [psutil.Process(controller)] if controller else [],
            "engines": engines}


def cpu_seconds(procs) -> dict[str, float]:
    out = {}
    for name, group in procs.items():
        total = 0.0
        for p in group:
            t = p.cpu_times()
            total += t.user + t.system
        out[name] = total
    return out


def measure_case(wb, solver: str, size: int, frames: int, warmup: int, repeat: int) -> dict:
    from mpiworkbench.widgets.live import FrameStats

    procs = processes(wb)
    records, wall, steps_seq, cpu, no_panel_s = [], 0.0, [], {k: 0.0 for k in procs}, 0.0
    for repetition in range(repeat):
        # a fresh solve every repetition (and again whenever it finishes, see play)
        handle = make_handle(wb, solver, size)
        try:
            panel = handle.panel(handle)
            play(panel, handle, warmup)
            panel.stats = FrameStats(window=frames)
            before = cpu_seconds(procs)
            done, played_s = play(panel, handle, frames)
            wall += played_s
            after = cpu_seconds(procs)
        finally:
            handle.close()
        for k in cpu:
            cpu[k] += after[k] - before[k]
        assert done == frames, f"{solver} {size}: the solver finished after {done} of {frames} frames"
        records += list(panel.stats.recent)
        steps = [int(f["steps"]) for f in panel.stats.recent]
        steps_seq += steps
        plain = make_handle(wb, solver, size)  # the same steps without a panel, from a fresh solve
        for k in steps:  # restarted where the panel's solve was (the same iteration counts)
            if getattr(plain, "finished", False):
                plain.reset()
            t0 = time.perf_counter()
            plain_steps(plain, k)
            no_panel_s += time.perf_counter() - t0
        if repetition < repeat - 1:
            plain.close()
    no_panel = no_panel_s / len(steps_seq)
    old = old_redraw_s(plain, solver)
    plain.close()

    def med(key):
        return statistics.median(f[key] for f in records)

    overhead = med("overhead")  # frame period minus the slowest rank's compute and exchange
    return {
        "case": f"{solver} {size}" + ("³" if solver == "wave" else "²"),
        "frames": len(records), "steps_per_frame": statistics.median(steps_seq),
        "compute_ms": med("compute") * 1e3, "exchange_ms": med("exchange") * 1e3,
        "transfer_ms": med("transfer") * 1e3, "drawing_ms": med("drawing") * 1e3,
        "transfer_plus_drawing_ms": statistics.median(f["transfer"] + f["drawing"] for f in records) * 1e3,
        "overhead_ms": overhead * 1e3, "frame_ms": med("total") * 1e3,
        "fps": len(records) / wall, "no_panel_ms": no_panel * 1e3, "old_redraw_ms": old * 1e3,
        "cores_busy": {k: v / wall for k, v in cpu.items()},
    }


def environment_variable(name: str) -> str | None:
    """*name* in an engine's environment (what the ranks inherited)."""
    import os

    return os.environ.get(name)


def run_cluster(cases, args, env: dict[str, str] | None = None) -> list[dict]:
    from mpiworkbench import Workbench

    saved = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    wb = Workbench(n=2, timeout=600)
    try:
        wb.start()
        if env:
            seen = wb.run(environment_variable, next(iter(env)))
            assert all(v == next(iter(env.values())) for v in seen), f"engines did not get {env}: {seen}"
        results = []
        world = wb._turns
        for solver, size in cases:
            # --ordering: each case also without the world's turn (an unordered client, as before
            # the shared-world issue), right after, on the same cluster
            for ordered in ((True, False) if args.ordering else (True,)):
                wb._connection.turns = world if ordered else None
                try:
                    row = measure_case(wb, solver, size, args.frames, args.warmup, args.repeat)
                finally:
                    wb._connection.turns = world
                row["yield"], row["ordered"] = bool(env), ordered
                print(format_row(row), flush=True)
                results.append(row)
        return results
    finally:
        wb.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def sweep_case(wb, solver: str, size: int, frames: int, warmup: int, kernel: str, chunk: int = 5) -> dict:
    """Play a case's panel pulling the whole picture (``resolution=None``, the path before issue
    24) and, on a second solver, with the picture reduced on the ranks to the panel's pixels:
    *chunk* frames of one, then of the other, until each has played *frames* (after *warmup*),
    so that a shared machine's changing load falls on both alike."""
    from mpiworkbench.widgets.live import FrameStats

    handles, panels = {}, {}
    try:
        for path in ("whole", "reduced"):
            handles[path] = make_handle(wb, solver, size, kernel)
            panels[path] = handles[path].panel(handles[path])
        screen = panels["reduced"].resolution  # the pixels the panel's image is drawn at
        panels["whole"].resolution = None
        records, wall = {path: [] for path in panels}, {path: 0.0 for path in panels}
        for path, panel in panels.items():
            play(panel, handles[path], warmup)
        while len(records["reduced"]) < frames:
            for path, panel in panels.items():
                n = min(chunk, frames - len(records[path]))
                panel.stats = FrameStats(window=n)
                done, played_s = play(panel, handles[path], n)
                wall[path] += played_s
                assert done == n, f"{solver} {size}: the solver finished early"
                records[path] += list(panel.stats.recent)
    finally:
        for handle in handles.values():
            handle.close()

    def summary(path):
        rec = records[path]

        def med(key):
            return statistics.median(f[key] for f in rec)

        return {"resolution": screen if path == "reduced" else None, "bytes": med("bytes"),
                "steps_per_frame": med("steps"), "compute_ms": med("compute") * 1e3,
                "exchange_ms": med("exchange") * 1e3, "transfer_ms": med("transfer") * 1e3,
                "drawing_ms": med("drawing") * 1e3, "overhead_ms": med("overhead") * 1e3,
                "frame_ms": med("total") * 1e3, "fps": len(rec) / wall[path]}

    return {"case": f"{solver} {size}" + ("³" if solver == "wave" else "²"),
            "full": summary("whole"), "screen": summary("reduced")}


def run_sweep(args) -> list[dict]:
    """Every case of :data:`SWEEP` on one 2-rank workbench (:func:`sweep_case`)."""
    from mpiworkbench import Workbench

    rows = []
    with Workbench(n=2, timeout=900) as wb:
        for solver, size in SWEEP:
            row = sweep_case(wb, solver, size, args.sweep_frames, args.sweep_warmup, args.kernel, args.sweep_chunk)
            print(format_sweep(row), flush=True)
            rows.append(row)
    return rows


SWEEP_HEADER = ("| case | picture | bytes/frame: whole → reduced | **beyond the solver** (ms): whole → reduced "
                "| transfer (ms) | drawing (ms) | compute + exchange (ms), reduced | steps/frame | "
                "**frames/s**: whole → reduced | frame period (ms), reduced: 1 / it |\n|" + "---|" * 10)


def _size(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def format_sweep(r: dict) -> str:
    f, s = r["full"], r["screen"]
    side = int(round((s["bytes"] / 8) ** 0.5))
    return (f"| {r['case']} | {side}² | {_size(f['bytes'])} → {_size(s['bytes'])} (×{s['bytes'] / f['bytes']:.3f}) "
            f"| {f['overhead_ms']:.1f} → **{s['overhead_ms']:.1f}** (×{s['overhead_ms'] / max(f['overhead_ms'], 1e-9):.2f}) "
            f"| {f['transfer_ms']:.1f} → {s['transfer_ms']:.1f} | {f['drawing_ms']:.1f} → {s['drawing_ms']:.1f} "
            f"| {s['compute_ms']:.1f} + {s['exchange_ms']:.1f} | {f['steps_per_frame']:.0f} → {s['steps_per_frame']:.0f} "
            f"| {f['fps']:.1f} → **{s['fps']:.1f}** | {s['frame_ms']:.1f}: {1e3 / s['frame_ms']:.1f} |")


HEADER = ("| case | steps/frame | compute + exchange (ms) | transfer (ms) | drawing (ms) | **beyond the solver** (ms) "
          "| frame (ms) | **frames/s** | same steps, no panel (ms/frame) | old redraw (ms/frame) "
          "| cores busy: kernel / controller / engines |\n|" + "---|" * 11)


def format_row(r: dict) -> str:
    busy = r["cores_busy"]
    return (f"| {r['case']}{' (yield)' if r.get('yield') else ''}{'' if r.get('ordered', True) else ' (unordered)'} "
            f"| {r['steps_per_frame']:.0f} "
            f"| {r['compute_ms']:.1f} + {r['exchange_ms']:.1f} | {r['transfer_ms']:.1f} | {r['drawing_ms']:.1f} "
            f"| **{r['overhead_ms']:.1f}** | {r['frame_ms']:.1f} | **{r['fps']:.1f}** | {r['no_panel_ms']:.1f} "
            f"| {r['old_redraw_ms']:.0f} | {busy['kernel']:.2f} / {busy.get('controller', 0):.2f} "
            f"/ {busy['engines']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the three headline cases")
    parser.add_argument("--frames", type=int, default=60, help="recorded frames per repeat")
    parser.add_argument("--warmup", type=int, default=10, help="frames before each recording")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--yield", dest="yield_", action="store_true",
                        help="also the headline cases with MPICH ranks yielding while they wait")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--ordering", action="store_true",
                        help="measure each case also without the shared world's turn (its cost)")
    parser.add_argument("--sweep", action="store_true",
                        help="the mesh sweep (wave 33-257, CG 257-4097): reduced pictures against whole ones")
    parser.add_argument("--sweep-frames", type=int, default=20, help="recorded frames per sweep case and path")
    parser.add_argument("--sweep-chunk", type=int, default=5,
                        help="frames one path plays before the other (each chunk starts Play again: its first "
                             "frame overlaps no drawing, so frames/s of the wall clock is below Play's steady rate)")
    parser.add_argument("--sweep-warmup", type=int, default=4)
    parser.add_argument("--kernel", default="c", help="the wave kernel of the sweep (bit for bit the same field)")
    args = parser.parse_args(argv)
    if args.sweep:
        print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; 2 ranks; "
              f"{args.sweep_frames} frames per case and path after {args.sweep_warmup}, in chunks of {args.sweep_chunk}; "
              f"wave kernel {args.kernel}\n")
        print(SWEEP_HEADER, flush=True)
        rows = run_sweep(args)
        print(f"\nload average after: {os.getloadavg()[0]:.2f}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"sweep": rows, "load_after": os.getloadavg()[0]}, f, indent=1)
        return 0
    cases = QUICK if args.quick else CASES
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; 2 ranks; "
          f"{args.repeat} x {args.frames} frames per case\n")
    print(HEADER, flush=True)
    rows = run_cluster(cases, args)
    if args.yield_:
        from mpiworkbench.core.launch import YIELD_WHILE_WAITING

        rows += run_cluster(QUICK, args, env=YIELD_WHILE_WAITING)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_after": os.getloadavg()[0]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
