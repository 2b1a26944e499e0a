"""The ``mpiworkbench`` command line.

Each module in this package that defines ``register(subparsers)`` adds one sub-command;
``register`` sets ``func`` (taking the parsed arguments, returning an exit code) as the
parser default. Modules must be cheap to import: no MPI, no ipyparallel at import time.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

import mpiworkbench
from mpiworkbench.core import mpi  # (cheap: mpi4py is imported only when a command uses MPI)
from mpiworkbench.core.implementations import MPIMismatch
from mpiworkbench.core.launchers import LauncherError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mpiworkbench",
        description="Learn, measure and teach MPI from Python.",
    )
    parser.add_argument("--version", action="version", version=f"mpiworkbench {mpiworkbench.__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    args.argv = argv
    try:
        check_outputs(args)  # before any MPI job runs: a run must not end in a path it cannot write
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, NotImplementedError, MPIMismatch, LauncherError) as exc:
        report_error(args.command, exc)
        return 2


#: Seconds the ranks of a job that failed wait for each other before they exit (see
#: :func:`report_error`): those that failed together meet within milliseconds.
ERROR_MEET_S = 10.0


def report_error(command: str, exc: BaseException) -> None:
    """Say *exc* once, on stderr, before the job's ranks exit with an error.

    Bad input raises on every rank (:func:`mpiworkbench.core.mpi.checked`): rank 0 says it. In
    an MPI world, a rank that exits with an error ends the world (``python -m mpi4py`` calls
    ``MPI_Abort``), which could kill rank 0 before it has written a word: so the ranks first
    meet (rank 0 after writing), within :data:`ERROR_MEET_S`. A rank whose error the others did
    not share (they did not come) says its own, naming its rank.
    """
    rank = _launcher_rank()
    if rank == 0:
        print(f"mpiworkbench {command}: error: {exc}", file=sys.stderr, flush=True)
    if not mpi.world_running():
        return
    if not mpi.meet_within(mpi.world(), ERROR_MEET_S) and rank != 0:
        print(f"mpiworkbench {command}: error on rank {rank}: {exc}", file=sys.stderr, flush=True)


#: The options that name a file a command writes (``-`` is stdout).
OUTPUT_OPTIONS = ("json", "csv", "plot", "save", "out", "analysis")


def check_outputs(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming the option and the path when a file the command would write
    cannot be written: its directory is missing or not writable (or the path is a directory)."""
    for option in OUTPUT_OPTIONS:
        value = getattr(args, option, None)
        if not isinstance(value, str) or value in ("", "-"):
            continue
        path = os.path.abspath(value)
        directory = os.path.dirname(path)
        if os.path.isdir(path):
            raise ValueError(f"--{option} {value!r} is a directory; name a file in it, e.g. {os.path.join(value, 'out')}")
        if not os.path.isdir(directory):
            raise ValueError(f"--{option} {value!r}: the directory {directory} does not exist; create it first "
                             "or choose another path")
        if not os.access(directory, os.W_OK):
            raise ValueError(f"--{option} {value!r}: the directory {directory} is not writable; choose another path")


def _launcher_rank() -> int:
    """This process's rank as the MPI launcher numbered it (0 outside mpiexec), without MPI."""
    for var in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK"):
        if var in os.environ:
            try:
                return int(os.environ[var])
            except ValueError:
                return 0
    return 0
