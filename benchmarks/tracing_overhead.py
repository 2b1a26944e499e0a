"""What does the MPI interposer cost? Per call on a ping-pong, and per wave step.

    python benchmarks/tracing_overhead.py [--launches 4] [--blocks 5] [--json out.json]

Three states of the same program, measured seconds apart:

* **plain** — ranks started without the interposer (``mpiexec -n 2 …``);
* **off** — interposer preloaded, recording off: every MPI call only updates the rank's
  in-flight record (what every workbench engine runs with, for the hang report);
* **on** — recording into the preallocated buffer.

Each launch starts two 2-rank jobs back to back (plain, then preloaded, order alternating per
launch); inside the preloaded job, *off* and *on* alternate in ``--blocks`` blocks. Reported:
the ping-pong round trip (8 B, ``mpi4py`` buffer API, 4 MPI calls on the critical path) and a
wave step (mesh 65³ split 2×1×1, numpy kernel, Sendrecv halo), and — the cleanest per-call
figure, nobody to wait for — an 8 B ``Sendrecv`` of each rank to itself on ``COMM_SELF``; each
as the median over blocks, and the ratios on/off (same job) and off/plain (the two jobs of a
launch). Per call: the difference divided by the calls per unit (4 per round trip; for the
wave step the per-call figure drowns in the step's noise, read its ratio). Two cores, shared:
expect noise; only the ratios measured in one launch mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PINGPONG_ITERS = 20000
WAVE_MESH, WAVE_STEPS = 65, 20


def _pingpong(comm, iters: int) -> float:
    import numpy as np
    from mpi4py import MPI

    buf = np.zeros(1, dtype=np.float64)
    peer = 1 - comm.rank
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iters):
        if comm.rank == 0:
            comm.Send(buf, peer, 1)
            comm.Recv(buf, peer, 1)
        else:
            comm.Recv(buf, peer, 1)
            comm.Send(buf, peer, 1)
    return (MPI.Wtime() - t0) / iters


def _self_sendrecv(iters: int) -> float:
    """One ``Sendrecv`` to itself on ``COMM_SELF`` per iteration: no partner to wait for, so the
    difference between states is the interposer's own cost per call."""
    import numpy as np
    from mpi4py import MPI

    a, b = np.zeros(1), np.zeros(1)
    self_comm, t0 = MPI.COMM_SELF, MPI.Wtime()
    for _ in range(iters):
        self_comm.Sendrecv(a, 0, 2, b, 0, 2)
    return (MPI.Wtime() - t0) / iters


def _wave_step(comm, solver) -> float:
    from mpi4py import MPI

    comm.Barrier()
    t0 = MPI.Wtime()
    solver.step(WAVE_STEPS)
    comm.Barrier()
    return (MPI.Wtime() - t0) / WAVE_STEPS


def inner(blocks: int) -> None:
    """One job: blocks of ping-pong and wave steps, in each state this job can be in."""
    from mpi4py import MPI

    from mpiworkbench.solvers.wave.solver import WaveSolver
    from mpiworkbench.trace import recorder

    comm = MPI.COMM_WORLD
    states = ["off", "on"] if recorder.available() else ["plain"]
    solver = WaveSolver(WAVE_MESH, comm=comm, dims=(2, 1, 1))
    out: dict[str, dict[str, list[float]]] = {s: {"self": [], "pingpong": [], "wave": []} for s in states}
    calls_per_step = None
    _pingpong(comm, 2000)  # warm-up
    _wave_step(comm, solver)
    for b in range(blocks):
        for state in states if b % 2 == 0 else states[::-1]:
            if state == "on":
                recorder.start(4 * PINGPONG_ITERS + 1000)
            out[state]["self"].append(_self_sendrecv(PINGPONG_ITERS))
            comm.Barrier()
            out[state]["pingpong"].append(_pingpong(comm, PINGPONG_ITERS))
            if state == "on":
                recorder.stop()
                recorder.start(100_000)
            out[state]["wave"].append(_wave_step(comm, solver))
            if state == "on":
                calls_per_step = len(recorder.stop()) / WAVE_STEPS
    solver.close()
    if comm.rank == 0:
        print(json.dumps({"states": out, "wave_calls_per_step_rank0": calls_per_step}))


def _job(preload: bool, blocks: int) -> dict:
    from mpiworkbench.core.launch import world_launch
    from mpiworkbench.trace.library import build

    launch = world_launch(np=2, limit_s=900)
    args = launch.command(2, [sys.executable, "-m", "mpi4py", __file__, "--inner", "--blocks", str(blocks)],
                          ["-genv", "LD_PRELOAD", str(build())] if preload else [])
    env = launch.environ()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=4)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--json", default=None)
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        inner(args.blocks)
        return
    launches = []
    for i in range(args.launches):
        order = [False, True] if i % 2 == 0 else [True, False]
        jobs = {preload: _job(preload, args.blocks) for preload in order}
        states = {**jobs[False]["states"], **jobs[True]["states"]}
        med = {s: {k: statistics.median(v) for k, v in d.items()} for s, d in states.items()}
        launches.append({"median": med, "wave_calls_per_step_rank0": jobs[True]["wave_calls_per_step_rank0"]})
    rows = []
    for what, unit_calls in (("self", 1), ("pingpong", 4), ("wave", None)):
        on_off = [l["median"]["on"][what] / l["median"]["off"][what] for l in launches]
        off_plain = [l["median"]["off"][what] / l["median"]["plain"][what] for l in launches]
        calls = unit_calls or statistics.median(l["wave_calls_per_step_rank0"] for l in launches)
        per_call_on = [(l["median"]["on"][what] - l["median"]["off"][what]) / calls for l in launches]
        per_call_off = [(l["median"]["off"][what] - l["median"]["plain"][what]) / calls for l in launches]
        rows.append({
            "what": what, "calls_per_unit": calls,
            "plain_us": statistics.median(l["median"]["plain"][what] for l in launches) * 1e6,
            "off_us": statistics.median(l["median"]["off"][what] for l in launches) * 1e6,
            "on_us": statistics.median(l["median"]["on"][what] for l in launches) * 1e6,
            "ratio_on_off": statistics.median(on_off), "ratio_off_plain": statistics.median(off_plain),
            "ratio_on_off_range": [min(on_off), max(on_off)], "ratio_off_plain_range": [min(off_plain), max(off_plain)],
            "per_call_on_ns": statistics.median(per_call_on) * 1e9,
            "per_call_off_ns": statistics.median(per_call_off) * 1e9,
        })
    print(f"{'':9} {'plain':>10} {'off':>10} {'on':>10} {'on/off':>14} {'off/plain':>14} {'ns/call on':>11} {'off':>7}")
    for r in rows:
        unit = {"self": "Sendrecv to itself", "pingpong": "round trip", "wave": "step"}[r["what"]]
        print(f"{r['what']:9} {r['plain_us']:8.2f}µs {r['off_us']:8.2f}µs {r['on_us']:8.2f}µs "
              f"{r['ratio_on_off']:6.3f} [{r['ratio_on_off_range'][0]:.2f}-{r['ratio_on_off_range'][1]:.2f}] "
              f"{r['ratio_off_plain']:6.3f} [{r['ratio_off_plain_range'][0]:.2f}-{r['ratio_off_plain_range'][1]:.2f}] "
              f"{r['per_call_on_ns']:9.0f} {r['per_call_off_ns']:7.0f}   (per {unit}, {r['calls_per_unit']:g} calls)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "launches": launches}, f, indent=1)


if __name__ == "__main__":
    main()
