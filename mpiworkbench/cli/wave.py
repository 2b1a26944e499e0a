"""``mpiworkbench wave``: run the thesis's 3-D wave equation solver (§6.1) in batch.

    mpiworkbench wave --np 2 --mesh 129 --steps 444 --json wave.json

prints the decomposition, dt, the final time, ``max |u − exact|`` and the time split into
compute and exchange; ``--json`` writes them, ``--save`` the gathered final field.
"""

from __future__ import annotations

import argparse
import math

from mpiworkbench.cli import _mpijob
from mpiworkbench.core import mpi
# The solver's registries; importing them pulls in neither MPI nor numba.
from mpiworkbench.solvers.wave.kernels import KERNELS
from mpiworkbench.solvers.wave.problem import EXCHANGES


def _mesh(text: str) -> str:
    parts = text.split(",")
    if len(parts) not in (1, 3) or not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"mesh must be N or NX,NY,NZ (positive integers); got {text!r}")
    return text


def _dims(text: str) -> tuple[int, int, int]:
    try:
        dims = tuple(int(v) for v in text.replace("x", ",").split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"dims must look like 2,1,1 (blocks per axis); got {text!r}") from None
    if len(dims) != 3:
        raise argparse.ArgumentTypeError(f"dims needs three numbers (x,y,z); got {text!r}")
    return dims  # type: ignore[return-value]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "wave",
        help="distributed 3-D wave equation solver (thesis §6.1)",
        description="Solve u_tt = c^2 lap(u) on the unit cube with du/dn = 0 and "
        "u(x,0) = 2cos(pi x)cos(pi y)cos(pi z), compare with the exact solution and time "
        "compute vs halo exchange.",
    )
    parser.add_argument("--mesh", type=_mesh, required=True, help="points per axis incl. boundary: N or NX,NY,NZ (thesis: 129 or 257)")
    parser.add_argument("--steps", type=int, default=None, help="time steps (default: ceil(2/dt), i.e. t ~ 2 as in the thesis)")
    parser.add_argument("--cfl", type=float, default=1.0, help="fraction of the stability limit used as dt (default 1)")
    parser.add_argument("--dt", type=float, default=None, help="explicit dt instead of --cfl (must not exceed the limit)")
    parser.add_argument("--dims", type=_dims, default=None, help="blocks per axis, e.g. 2,1,1 (default MPI.Compute_dims)")
    parser.add_argument("--kernel", choices=KERNELS, default="numpy", help="update kernel (default numpy)")
    parser.add_argument("--exchange", choices=EXCHANGES, default="sendrecv", help="halo exchange (default sendrecv)")
    parser.add_argument("--json", metavar="FILE", default=None, help="write the result as JSON ('-' for stdout)")
    parser.add_argument("--save", metavar="FILE.npy", default=None, help="save the gathered final field (rank 0)")
    _mpijob.add_mpi_arguments(parser)
    parser.set_defaults(func=run)


def format_result(res: dict) -> str:
    """The summary rank 0 prints."""
    mesh = "x".join(map(str, res["mesh"]))
    dims = "x".join(map(str, res["dims"]))
    return "\n".join(
        [
            f"wave on {mesh} points, {res['np']} rank(s), dims {dims}, kernel {res['kernel']}, exchange {res['exchange']}",
            f"dt {res['dt']:.6g} (cfl {res['cfl']:.4g}), {res['steps']} steps, t = {res['t']:.6f}",
            f"max_error      max|u - exact| = {res['max_error']:.3e}",
            f"time           {res['time_s']:.3f} s, {res['time_per_step_s'] * 1e3:.3f} ms/step",
            f"split (max over ranks)  compute {res['compute_s']:.3f} s  exchange {res['exchange_s']:.3f} s",
        ]
    )


def run(args: argparse.Namespace) -> int:
    def body(comm) -> int:
        from mpiworkbench.solvers.wave.solver import WaveSolver  # lazy: --help imports every subcommand's module; only a run needs the solver

        solver = WaveSolver(
            args.mesh, comm=comm, dims=args.dims, cfl=args.cfl, dt=args.dt, kernel=args.kernel, exchange=args.exchange
        )
        try:
            steps = math.ceil(2.0 / solver.dt - 1e-9) if args.steps is None else args.steps
            comm.Barrier()
            t0 = mpi.MPI().Wtime()
            solver.step(steps)
            comm.Barrier()
            elapsed = mpi.MPI().Wtime() - t0
            err = solver.error()
            timings = comm.gather(solver.timings(), root=0)
            field = solver.gather() if args.save else None
            info = solver.info()
        finally:
            solver.close()
        if comm.Get_rank() == 0:
            res = {
                "mesh": list(info["mesh"]),
                "np": comm.Get_size(),
                "dims": list(info["dims"]),
                "kernel": info["kernel"],
                "exchange": info["exchange"],
                "steps": steps,
                "dt": info["dt"],
                "cfl": info["cfl"],
                "t": info["t"],
                "max_error": err,
                "time_s": elapsed,
                "time_per_step_s": elapsed / steps if steps else 0.0,
                "compute_s": max(t["compute_s"] for t in timings),
                "exchange_s": max(t["exchange_s"] for t in timings),
                "per_rank": timings,
            }
            _mpijob.report(format_result(res), res, args.json, args.save, field)
        return 0

    return _mpijob.run(args, body)
