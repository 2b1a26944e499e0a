"""Shared plumbing for the CLI commands that run on MPI ranks (bench, wave, cg, …).

A command calls :func:`add_mpi_arguments` on its parser and wraps its body with
:func:`run`: typed in a shell, the command re-launches itself under ``mpiexec -n NP``;
under an existing ``mpiexec``/``srun`` it runs in that world and checks ``--np`` agrees.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.core import implementations, launch, mpi, usable
from mpiworkbench.core.jsonfile import write_json


def add_mpi_arguments(parser: argparse.ArgumentParser, default_np: int | None = None,
                      several: bool = False) -> None:
    """``--np``, ``--transport``, ``--mpi`` (*several*: a list, see :func:`add_implementation_argument`), ``--timeout``."""
    parser.add_argument(
        "--np",
        type=int,
        default=default_np,
        help="number of MPI ranks; starts mpiexec unless already running under one",
    )
    add_transport_argument(parser)
    add_implementation_argument(parser, several)
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help=f"wall-clock limit of the MPI job in seconds (default {launch.DEFAULT_TIMEOUT_S})",
    )


def add_transport_argument(parser: argparse.ArgumentParser) -> None:
    """``--transport`` (:data:`mpiworkbench.core.launch.TRANSPORTS`)."""
    parser.add_argument(
        "--transport",
        choices=tuple(launch.TRANSPORTS),
        default="auto",
        help="how the ranks talk: auto (shared memory within a host, the default) or network "
             "(TCP between every pair of ranks, as across nodes: over loopback on one host)",
    )


def add_implementation_argument(parser: argparse.ArgumentParser, several: bool = False) -> None:
    """``--mpi`` (:mod:`mpiworkbench.core.implementations`): the MPI implementation the ranks
    run under; with *several*, a comma-separated list measured side by side."""
    names = ", ".join(implementations.names())
    parser.add_argument(
        "--mpi",
        default=None,
        metavar="NAME[,NAME...]" if several else "NAME",
        help=(f"MPI implementation(s) to run under, side by side in one run ({names}; "
              f"default: ${implementations.VARIABLE}, else {implementations.DEFAULT_SAID})") if several else
             (f"MPI implementation to run under ({names}; default: ${implementations.VARIABLE}, "
              f"else {implementations.DEFAULT_SAID})"),
    )


def implementations_of(args: argparse.Namespace) -> list[implementations.Implementation]:
    """The implementations ``--mpi`` names (this process's when it names none), each one that can
    run here (else a ``ValueError``, the CLI's clear error: :func:`~mpiworkbench.core.usable.check`'s
    refusal, which says what is missing and how to install it only where that would help)."""
    text = getattr(args, "mpi", None)
    chosen = implementations.parse(text) if text else [implementations.current()]
    for impl in chosen:
        try:
            usable.check(impl)
        except implementations.MPIMismatch as exc:
            raise ValueError(str(exc)) from None
    return chosen


def implementation(args: argparse.Namespace) -> implementations.Implementation:
    """The one implementation ``--mpi`` names (a command that runs one job)."""
    chosen = implementations_of(args)
    if len(chosen) > 1:
        raise ValueError(f"--mpi {args.mpi}: this command runs under one MPI implementation at a "
                         "time; `bench` and `speedup` take several")
    return chosen[0]


def run(args: argparse.Namespace, body: Callable[[Any], int | None]) -> int:
    """Run ``body(comm)`` on every rank, launching ``mpiexec`` first when needed."""
    if args.np is not None and args.np < 1:
        raise ValueError(f"--np must be at least 1; got {args.np}")
    if launch.needs_launch(args.np):
        return launch.run_under_mpiexec(args.np, args.argv, timeout_s=args.timeout, transport=transport(args),
                                        impl=implementation(args))
    if getattr(args, "mpi", None) and implementation(args).name != implementations.current().name:
        raise ValueError(
            f"--mpi {args.mpi} must be chosen when mpiexec starts the ranks, but this command runs "
            f"inside an mpiexec of {implementations.current().name}: pass --np N to let it start them")
    if transport(args) != launch.transport():
        variables = " ".join(f"-genv {k} {v}" for k, v in launch.TRANSPORTS[transport(args)].items())
        raise ValueError(
            f"--transport {transport(args)} must be chosen when mpiexec starts the ranks: pass --np N "
            f"to let this command start them, or start them with `mpiexec {variables} ...`")
    comm = mpi.world()
    if args.np is not None and args.np != comm.size:
        raise ValueError(
            f"--np {args.np} does not match the MPI world of {comm.size} rank(s) this command "
            "runs in; drop --np or launch with the same count"
        )
    return int(body(comm) or 0)


def transport(args: argparse.Namespace) -> str:
    """The ``--transport`` of a command's arguments (``auto`` for commands without it)."""
    return getattr(args, "transport", None) or "auto"


def report(text: str, payload: Any, json_path: str | Path | None, save_path: str | Path | None = None, field: Any = None) -> None:
    """Rank 0's ending of a solver command: print *text*, write the JSON, save *field* as ``.npy``."""
    print(text, flush=True)
    write_json(json_path, payload)
    if save_path is not None:
        import numpy as np

        np.save(save_path, field)
