"""``mpiworkbench job``: run a job saved from a notebook session, and compare it with the session.

    mpiworkbench job run PATH [--np N] [--mpi NAME] [--timeout S]
    mpiworkbench job compare PATH --np N

``job run`` starts ``PATH/job.py`` on N ranks (the session's size by default) as the session's
world was started — the session's MPI implementation unless ``--mpi`` names another, its
launcher (inside a Slurm allocation ``srun`` with the PMI the library speaks, for the site's MPI),
the MPI interposer preloaded for ``%%px --trace`` cells — under a wall-clock limit; then says
which cells' output and which values equal the session's (``PATH/output/np-N/``). Exit code 0:
equal; 3: the job ran and something differs; 1: a call failed or the job ended early.
``job compare`` says it again from a run's files (after ``sbatch job.sbatch``, say).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mpiworkbench.cli._mpijob import add_implementation_argument
from mpiworkbench.core import implementations, launch, usable
from mpiworkbench.jobs import compare, layout


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "job", help="run a job saved from a notebook session (wb.export_job) and compare it with the session",
        description="Run a job saved from a notebook session (wb.export_job) and compare its output with the session's.")
    commands = parser.add_subparsers(dest="job_command", metavar="ACTION", required=True)
    run_parser = commands.add_parser("run", help="run the job on N ranks and compare it with the session")
    run_parser.add_argument("path", help="the job's directory (wb.export_job's)")
    run_parser.add_argument("--np", type=int, default=None, help="ranks (default: the session's size)")
    add_implementation_argument(run_parser)
    run_parser.add_argument("--timeout", type=float, default=None,
                            help=f"wall-clock limit of the job in seconds (default {launch.DEFAULT_TIMEOUT_S})")
    run_parser.set_defaults(func=run)
    compare_parser = commands.add_parser("compare", help="compare a run of the job with the session")
    compare_parser.add_argument("path", help="the job's directory")
    compare_parser.add_argument("--np", type=int, required=True, help="the ranks of the run to compare")
    compare_parser.set_defaults(func=compare_run)


def run(args: argparse.Namespace) -> int:
    job_dir = Path(args.path).expanduser().resolve()
    meta = layout.read_meta(job_dir)
    np = meta["world"]["n"] if args.np is None else args.np
    if np < 1:
        raise ValueError(f"--np must be at least 1; got {np}")
    impl = implementations.get(args.mpi or meta["world"]["mpi"])
    try:
        usable.check(impl)
    except implementations.MPIMismatch as exc:
        raise ValueError(f"the job's MPI, {impl.name}, cannot run here: {exc}") from None
    from mpiworkbench.trace import library  # lazy: it may build the interposer (mpicc)

    program = [sys.executable, "-m", "mpi4py", str(job_dir / layout.PROGRAM)]
    print(f"mpiworkbench job: {job_dir} on {np} rank(s) under {impl.name} "
          f"(launcher: {impl.launcher().name})", flush=True)
    code = launch.run(np, program, impl, library.mpiexec_args(impl), args.timeout)
    verdict = layout.output_dir(job_dir, np) / layout.COMPARE
    if code == 0 and verdict.exists():  # rank 0 compared it and said so
        return int(json.loads(verdict.read_text())["code"])
    lines, said = compare.report(job_dir, np)
    print(f"mpiworkbench job: the job ended with exit code {code} before it finished", file=sys.stderr)
    print("\n".join(lines), flush=True)
    return compare.FAILED if code != 0 else said


def compare_run(args: argparse.Namespace) -> int:
    job_dir = Path(args.path).expanduser().resolve()
    if not layout.output_dir(job_dir, args.np).is_dir():
        raise FileNotFoundError(f"{layout.output_dir(job_dir, args.np)} does not exist: the job has not run at "
                                f"{args.np} rank(s); run it with `mpiworkbench job run {job_dir} --np {args.np}`")
    lines, code = compare.report(job_dir, args.np)
    print("\n".join(lines))
    return code
