"""Time per step of each wave kernel against the C kernel, bytes against copy bandwidth, 2-rank efficiency.

One run measures, on the thesis mesh (default 129³):

1. the update kernels (``numpy``, ``numba``, ``c``; same arithmetic, bit-identical
   results) on the whole block in this process, interleaved, best of ``--repeat`` rounds
   of ``--steps`` updates each; reported as ratios to the C kernel (targets: numba
   ≤ 1.5×, NumPy ≤ 4×; the thesis found Python 8–10× slower than C);
2. the bytes a step must move at least — read ``u`` and ``u_old``, write ``u_new``:
   24 bytes per point — as a bandwidth, against ``numpy.copyto`` with the same working
   set (1.5 mesh-sized arrays copied: 16 bytes per element, read + write) in the same run;
3. the parallel efficiency ``E = T1 / (2·T2)`` of the whole solver (C kernel, blocking
   Sendrecv exchange) under ``mpiexec -n 1`` and ``-n 2`` via the ``mpiworkbench wave``
   CLI, with each run's compute / exchange split.

Ratios from one run are what to compare; absolute times depend on the machine and its
load (this machine has 2 cores shared with other work). Usage::

    .venv/bin/python benchmarks/wave_kernels.py [--mesh 129] [--steps 20] [--repeat 5] [--parallel-steps 100] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from mpiworkbench.solvers.wave import kernels as wave_kernels
from mpiworkbench.solvers.wave.problem import stable_dt
BYTES_PER_POINT_STEP = 3 * 8  # read u, read u_old, write u_new
BYTES_PER_POINT_COPY = 2 * 8  # read src, write dst


def kernel_times(mesh: int, steps: int, repeat: int) -> dict[str, float]:
    """Best seconds per update of each kernel on an ``mesh³`` block (interleaved rounds)."""
    shape = (mesh + 2,) * 3
    h = 1.0 / (mesh - 1)
    c2 = (stable_dt((mesh,) * 3) / h) ** 2
    coeffs = (c2, c2, c2, 2.0 * (1.0 - 3.0 * c2))
    rng = np.random.default_rng(0)
    u, uo = rng.standard_normal(shape), rng.standard_normal(shape)
    box = wave_kernels.interior_box(shape)
    kernels = {name: wave_kernels.make_update(name, shape, coeffs) for name in wave_kernels.KERNELS}
    outputs = {}
    for name, kernel in kernels.items():  # warm-up: JIT, library load, page faults
        outputs[name] = np.zeros(shape)
        kernel(outputs[name], u, uo, box)
    for name in kernels:
        assert np.array_equal(outputs[name], outputs["c"]), f"{name} kernel differs from C"
    best = {name: float("inf") for name in kernels}
    for _ in range(repeat):
        for name, kernel in kernels.items():
            out = outputs[name]
            t0 = time.perf_counter()
            for _ in range(steps):
                kernel(out, u, uo, box)
            best[name] = min(best[name], (time.perf_counter() - t0) / steps)
    return best


def copy_time(elements: int, steps: int, repeat: int) -> float:
    """Best seconds per ``numpy.copyto`` of *elements* doubles."""
    src = np.random.default_rng(1).standard_normal(elements)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(steps):
            np.copyto(dst, src)
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def solver_run(nprocs: int, mesh: int, steps: int) -> dict:
    """One ``mpiworkbench wave`` run (C kernel, sendrecv) on *nprocs* ranks; its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "wave.json")
        cmd = [sys.executable, "-m", "mpiworkbench", "wave", "--np", str(nprocs), "--mesh", str(mesh),
               "--steps", str(steps), "--kernel", "c", "--exchange", "sendrecv", "--json", out, "--timeout", "900"]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        with open(out) as f:
            return json.load(f)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=int, default=129)
    parser.add_argument("--steps", type=int, default=20, help="updates per timed round")
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds (best is kept)")
    parser.add_argument("--parallel-steps", type=int, default=100, help="steps of the 1- and 2-rank solver runs")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    times = kernel_times(args.mesh, args.steps, args.repeat)
    points = args.mesh**3
    # same working set as a step (three mesh-sized arrays): source and destination of 1.5 arrays each,
    # so neither fits in a cache the stencil's arrays do not fit in
    copy_elements = 3 * points // 2
    copy_s = copy_time(copy_elements, args.steps, args.repeat)
    copy_bw = BYTES_PER_POINT_COPY * copy_elements / copy_s
    result = {
        "mesh": args.mesh,
        "kernel_time_per_step_s": times,
        "ratio_to_c": {k: t / times["c"] for k, t in times.items()},
        "targets": {"numba": 1.5, "numpy": 4.0},
        "bytes_per_step": BYTES_PER_POINT_STEP * points,
        "copy_bandwidth_GBps": copy_bw / 1e9,
        "kernel_bandwidth_GBps": {k: BYTES_PER_POINT_STEP * points / t / 1e9 for k, t in times.items()},
        "kernel_bandwidth_fraction_of_copy": {k: BYTES_PER_POINT_STEP * points / t / copy_bw for k, t in times.items()},
    }
    runs = {n: solver_run(n, args.mesh, args.parallel_steps) for n in (1, 2)}
    t1, t2 = runs[1]["time_per_step_s"], runs[2]["time_per_step_s"]
    result["parallel"] = {
        "steps": args.parallel_steps,
        "time_per_step_s": {"1": t1, "2": t2},
        "speedup": t1 / t2,
        "efficiency": t1 / (2 * t2),
        "split_s": {str(n): {"compute_s": r["compute_s"], "exchange_s": r["exchange_s"]} for n, r in runs.items()},
        "max_error": {str(n): r["max_error"] for n, r in runs.items()},
    }

    print(f"wave kernels on {args.mesh}^3 (best of {args.repeat} x {args.steps} updates)")
    for k, t in times.items():
        print(f"  {k:6s} {t * 1e3:8.2f} ms/step  {t / times['c']:5.2f}x C  "
              f"{result['kernel_bandwidth_GBps'][k]:6.2f} GB/s = {result['kernel_bandwidth_fraction_of_copy'][k]:.2f} of copy")
    print(f"  copy   {copy_s * 1e3:8.2f} ms ({copy_elements} doubles)  copy bandwidth {copy_bw / 1e9:.2f} GB/s (numpy.copyto, read+write)")
    p = result["parallel"]
    print(f"solver (C kernel, sendrecv), {args.parallel_steps} steps: 1 rank {t1 * 1e3:.2f} ms/step, "
          f"2 ranks {t2 * 1e3:.2f} ms/step, speedup {p['speedup']:.2f}, efficiency {p['efficiency']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return result


if __name__ == "__main__":
    main()
