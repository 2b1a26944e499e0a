"""``mpiworkbench cg``: solve the thesis's 2-D Poisson problem with distributed CG.

    mpiworkbench cg --np 2 --mesh 1025 --json cg.json

prints iterations, the final ``‖r‖/‖b‖`` and ``ρ_k/ρ_0``, the error against the exact
``x(1−x)y(1−y)`` and the time split; ``--json`` writes them, ``--save`` the solution.
"""

from __future__ import annotations

import argparse

from mpiworkbench.cli import _mpijob
# The solver's registries; importing them pulls in neither MPI, numba nor SciPy.
from mpiworkbench.solvers.cg.variants import CRITERIA, PARTITIONS, RHS_NAMES, VARIANTS


def _dims(text: str) -> tuple[int, int]:
    try:
        py, px = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"dims must look like 2x3 (row blocks x column blocks); got {text!r}") from None
    return py, px


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "cg",
        help="distributed conjugate gradients on the 2-D Poisson problem (thesis §6.2)",
        description="Solve the 5-point Poisson system on MESH x MESH interior points with "
        "distributed CG (thesis Algorithm 2) and report iterations, residual, error and timings.",
    )
    parser.add_argument("--mesh", type=int, required=True, help="interior points per axis (thesis: 1025 or 2049)")
    parser.add_argument("--tol", type=float, default=1e-8, help="stopping tolerance (default 1e-8)")
    parser.add_argument(
        "--criterion", choices=CRITERIA, default="thesis",
        help="thesis: rho_k/rho_0 <= tol from x0 = b (Algorithm 2); relative: ||r||/||b|| <= tol from x0 = 0",
    )
    parser.add_argument("--partition", choices=PARTITIONS, default="rows", help="row blocks (thesis) or 2-D blocks")
    parser.add_argument("--dims", type=_dims, default=None, help="rank grid for --partition blocks, e.g. 2x2")
    parser.add_argument("--variant", choices=VARIANTS, default="classic", help="allreduces per iteration: thesis 3, classic 2, fused 1")
    parser.add_argument("--backend", default="mpi4py-buf", help="communication backend (default mpi4py-buf)")
    parser.add_argument("--rhs", choices=RHS_NAMES, default="manufactured", help="right-hand side f (default manufactured)")
    parser.add_argument("--maxiter", type=int, default=None, help="iteration cap (default 10*mesh+100)")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the result as JSON ('-' for stdout)")
    parser.add_argument("--save", metavar="FILE.npy", default=None, help="save the MESH x MESH solution (rank 0)")
    _mpijob.add_mpi_arguments(parser)
    parser.set_defaults(func=run)


def format_result(res: dict) -> str:
    """The human-readable summary rank 0 prints."""
    split = res["timing_split_s"]
    per_it = res["time_per_iteration_s"]
    lines = [
        f"CG on {res['mesh']}x{res['mesh']} interior points ({res['unknowns']} unknowns), "
        f"{res['np']} rank(s), {res['partition']} dims {res['dims'][0]}x{res['dims'][1]}, "
        f"variant {res['variant']}, backend {res['backend']}",
        f"status         {res['status']} after {res['iterations']} iterations "
        f"({res['criterion']} criterion, tol {res['tol']:g})",
        f"residual       ||r||/||b|| = {res['residual']:.3e} (recomputed b-Ax: {res['true_residual']:.3e})",
        f"rho_ratio      rho_k/rho_0 = {res['rho_ratio']:.3e}",
    ]
    if res["max_error"] is not None:
        lines.append(f"max_error      max|x - x(1-x)y(1-y)| = {res['max_error']:.3e}")
    lines.append(
        f"time           {res['time_s']:.3f} s"
        + (f", {per_it * 1e3:.3f} ms/iteration" if per_it else "")
        + f" (setup {res['setup_s']:.3f} s)"
    )
    lines.append(
        "split (max over ranks)  "
        + "  ".join(f"{k} {v:.3f} s" for k, v in split.items())
    )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    def body(comm) -> int:
        from mpiworkbench.solvers.cg.solver import CGSolver  # lazy: the solver imports numba and SciPy, which --help must not
        solver = CGSolver(
            args.mesh, comm=comm, tol=args.tol, criterion=args.criterion, partition=args.partition,
            dims=args.dims, rhs=args.rhs, maxiter=args.maxiter, variant=args.variant, backend=args.backend,
        )
        try:
            solver.iterate(None)
            res = solver.result()
            u = solver.gather_solution() if args.save else None
        finally:
            solver.close()
        if comm.Get_rank() == 0:
            _mpijob.report(format_result(res), res, args.json, args.save, u)
        return 0

    return _mpijob.run(args, body)
