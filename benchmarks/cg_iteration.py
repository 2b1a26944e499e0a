"""Time per CG iteration: ours against ``scipy.sparse.linalg.cg``, and the 2-rank efficiency.

One run measures, on the same ``mesh × mesh`` Poisson matrix (thesis: 1025²):

1. our :class:`~mpiworkbench.solvers.cg.solver.CGSolver` on one rank against
   ``scipy.sparse.linalg.cg`` — both in this process, alternating, best of ``--repeat``
   runs of ``--iterations`` iterations (target: ours within 1.25× of scipy's);
2. the parallel efficiency ``E = T1 / (2·T2)`` of our solver under ``mpiexec -n 1`` and
   ``mpiexec -n 2`` (same script, ``--worker`` mode), with each rank's time split.

BLAS runs single-threaded (set before numpy loads). Both solvers stop only at the iteration count (tolerance 1e-300), so they do the same
work. Ratios from one run are what to compare; absolute times depend on the machine and
its load. Usage::

    .venv/bin/python benchmarks/cg_iteration.py [--mesh 1025] [--iterations 200] [--repeat 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

# One BLAS thread per process, for scipy's cg as for every MPI rank: on a shared 2-core
# machine multi-threaded OpenBLAS ddot/daxpy wait for each other and cost milliseconds.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

UNREACHABLE_TOL = 1e-300


def time_ours(mesh: int, iterations: int, comm) -> dict:
    from mpiworkbench.solvers.cg.solver import CGSolver
    solver = CGSolver(mesh, comm=comm, tol=UNREACHABLE_TOL, criterion="relative", maxiter=iterations + 1)
    comm.Barrier()
    t0 = time.perf_counter()
    solver.iterate(iterations)
    elapsed = time.perf_counter() - t0
    assert solver.iterations == iterations, solver.iterations
    split = solver.timings()
    solver.close()
    slowest = comm.allreduce(elapsed, op=_mpi().MAX)
    return {"time_per_iteration_s": slowest / iterations, "split_s": comm.gather(split, root=0)}


def time_scipy(mesh: int, iterations: int) -> float:
    import numpy as np
    import scipy.sparse.linalg as spla

    from mpiworkbench.solvers.cg import poisson
    a, b = poisson.global_matrix(mesh), poisson.global_rhs(mesh)
    count = [0]
    t0 = time.perf_counter()
    _, info = spla.cg(a, b, rtol=UNREACHABLE_TOL, atol=0.0, maxiter=iterations,
                      callback=lambda xk: count.__setitem__(0, count[0] + 1))
    elapsed = time.perf_counter() - t0
    assert count[0] == iterations and info == iterations, (count[0], info)
    np.asarray(a.data)  # keep the matrix alive through the timed region
    return elapsed / iterations


def _mpi():
    from mpiworkbench.core import mpi
    return mpi.MPI()


def worker(args) -> None:
    comm = _mpi().COMM_WORLD
    best = None
    for _ in range(args.repeat):
        run = time_ours(args.mesh, args.iterations, comm)
        if best is None or run["time_per_iteration_s"] < best["time_per_iteration_s"]:
            best = run
    if comm.rank == 0:
        print(json.dumps({"np": comm.size, **best}))


def run_worker(np_: int, args) -> dict:
    from mpiworkbench.core.launch import world_launch

    launch = world_launch(np=np_, limit_s=float(os.environ.get("MPIEXEC_TIMEOUT", "1800")))
    cmd = launch.command(np_, [sys.executable, "-m", "mpi4py", __file__, "--worker", "--mesh", str(args.mesh),
                               "--iterations", str(args.iterations), "--repeat", str(args.repeat)])
    env = launch.environ()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=int, default=1025)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the figures as JSON")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0

    comm = _mpi().COMM_SELF
    ours, scipy_ = [], []
    for _ in range(args.repeat):  # alternate so load changes hit both alike
        ours.append(time_ours(args.mesh, args.iterations, comm)["time_per_iteration_s"])
        scipy_.append(time_scipy(args.mesh, args.iterations))
    t_ours, t_scipy = min(ours), min(scipy_)
    one, two = run_worker(1, args), run_worker(2, args)
    t1, t2 = one["time_per_iteration_s"], two["time_per_iteration_s"]
    result = {
        "mesh": args.mesh,
        "iterations": args.iterations,
        "repeat": args.repeat,
        "ours_1rank_ms_per_iteration": t_ours * 1e3,
        "scipy_cg_ms_per_iteration": t_scipy * 1e3,
        "ours_over_scipy": t_ours / t_scipy,
        "target_ours_over_scipy": 1.25,
        "mpiexec_1rank_ms_per_iteration": t1 * 1e3,
        "mpiexec_2ranks_ms_per_iteration": t2 * 1e3,
        "speedup_2ranks": t1 / t2,
        "parallel_efficiency_2ranks": t1 / (2 * t2),
        "split_2ranks_s": two["split_s"],
        "cores": os.cpu_count(),
        "load_average_1min": os.getloadavg()[0],
    }
    print(f"mesh {args.mesh}² ({args.mesh**2} unknowns), {args.iterations} iterations, best of {args.repeat}")
    print(f"  ours, 1 rank          {t_ours * 1e3:8.3f} ms/iteration")
    print(f"  scipy.sparse.linalg.cg{t_scipy * 1e3:8.3f} ms/iteration")
    print(f"  ratio ours/scipy      {t_ours / t_scipy:8.3f}   (target <= 1.25)")
    print(f"  mpiexec -n 1          {t1 * 1e3:8.3f} ms/iteration")
    print(f"  mpiexec -n 2          {t2 * 1e3:8.3f} ms/iteration")
    print(f"  speedup {t1 / t2:.3f}, parallel efficiency {t1 / (2 * t2):.3f} on {os.cpu_count()} cores "
          f"(load average {os.getloadavg()[0]:.1f})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
