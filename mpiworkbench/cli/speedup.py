"""``mpiworkbench speedup {inner,wave,cg,heat,bench} --np 1,2[,…] … --json FILE``.

Starts ``mpiexec`` once with the largest rank count; the smaller counts run on
sub-communicators of that world (the same :func:`~mpiworkbench.speedup.point.run_point`
the notebook panel uses). Prints a table like thesis Table 2.1 and writes times,
speedups and efficiencies to JSON. ``--backend c,mpi4py-buf,…`` (wave, cg, heat) crosses
the variants with communication backends and adds every point's ratio to C (thesis
Figs. 6.2-6.5 and 6.10-6.13); a backend bound to ``MPI_COMM_WORLD`` (numba-mpi) makes
every rank count run in a world of its own (one ``mpiexec`` per count), for all backends
alike.

``--mpi mpich,openmpi,impi`` runs the experiment under each MPI implementation
(:mod:`mpiworkbench.core.implementations`), one after another with its own ``mpiexec``:
one result side by side, every point naming its implementation (``mpi``), each one's points
curves of their own (speedups and ratios to C within the implementation),
``environments`` holding each one's library record (``library_version`` included) and
``failed`` those whose job failed (the others are kept; the exit code is then not 0).
``--json`` is rewritten after every job.

``--trace`` runs every point's timed work once more with the MPI interposer preloaded and
recording (untimed), and prints and writes each point's POP factors (``pop`` in the JSON:
load balance, communication, serialisation, transfer, parallel efficiency, and across the
rank counts computation scalability and global efficiency).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from mpiworkbench.cli import _mpijob
from mpiworkbench.core import implementations, launch, machine, mpi
from mpiworkbench.core.machine import PLACEMENTS
from mpiworkbench.speedup import analysis, experiments
from mpiworkbench.speedup.factors import format_pop
from mpiworkbench.speedup.plan import SpeedupSpec, begin_experiment, parse_int_list, run_experiment
from mpiworkbench.trace import library

#: Set in the environment of an ``mpiexec`` the command starts as one part of several (a
#: rank count in a world of its own: ``"<nranks>"``; every count of one MPI implementation
#: of several: ``"all"``): the part writes its JSON to the ``--json`` it is given and
#: prints no table.
WORLD_PART_VARIABLE = "MPIWORKBENCH_SPEEDUP_WORLD_OF"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "speedup",
        help="wall-clock time, speedup and efficiency over rank counts",
        description=__doc__.split("\n\n")[0],
    )
    chooser = parser.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for exp in experiments.EXPERIMENTS.values():
        sub = chooser.add_parser(exp.name, help=exp.title, description=f"{exp.title}. Timed: {exp.timed}.")
        sub.add_argument("--np", required=True, help="rank counts, e.g. 1,2,4 (mpiexec starts with the largest)")
        sub.add_argument(
            f"--{exp.size_name}",
            dest="sizes",
            default=None,
            help=f"{exp.size_help}; several separated by commas (default {','.join(map(str, exp.default_sizes))})",
        )
        sub.add_argument(
            "--variants",
            default=None,
            help=f"comma-separated, from {', '.join(exp.variants)} (default {','.join(exp.default_variants)})",
        )
        if exp.backends:
            sub.add_argument(
                "--backend",
                default=None,
                help=f"comma-separated communication backends to cross the variants with, from "
                     f"{', '.join(exp.backends)} (variants then from {', '.join(exp.backend_variants)}, "
                     f"default {','.join(exp.default_backend_variants)}); adds the ratio to C",
            )
        for p in exp.params:
            sub.add_argument(
                f"--{p.name}", type=p.type, default=None, choices=p.choices or None, help=f"{p.help} (default {p.default})"
            )
        sub.add_argument("--repeats", type=int, default=5, help="timed repetitions per point (median reported)")
        sub.add_argument("--warmup", type=int, default=1, help="untimed runs before the repetitions")
        sub.add_argument("--scaling", choices=experiments.SCALINGS, default=experiments.SCALINGS[0])
        sub.add_argument(
            "--place",
            default=None,
            help=f"which ranks a point of fewer ranks takes, comma-separated from {', '.join(PLACEMENTS)} "
                 f"(default {PLACEMENTS[0]}): packed fills one node first, spread goes across the nodes; "
                 "both measure intra- against inter-node (the same on one host)",
        )
        sub.add_argument("--json", default=None, metavar="FILE", help="write the result to FILE ('-' for stdout)")
        sub.add_argument("--timeout", type=float, default=None, help="wall-clock limit of the MPI job in seconds")
        _mpijob.add_transport_argument(sub)
        _mpijob.add_implementation_argument(sub, several=True)
        sub.add_argument(
            "--yield-while-waiting",
            action="store_true",
            help="MPICH ranks give their core away while they wait (MPIR_CVAR_ENABLE_HEAVY_YIELD; see "
                 "benchmarks/mpich_yield.py); frees the cores for other work but slows every wait, "
                 "so it is off by default",
        )
        sub.add_argument("--trace", action="store_true",
                         help="trace one extra, untimed run of every point and report its POP factors "
                              "(load balance, communication, serialisation, transfer; scalability)")
        sub.add_argument("--plot", default=None, metavar="FILE",
                         help="also save the figure (time, speedup, ratio to C; thesis values beside) to FILE")
        sub.set_defaults(func=main)


def build_spec(args: argparse.Namespace):
    exp = experiments.get(args.experiment)
    params = {p.name: getattr(args, p.name) for p in exp.params if getattr(args, p.name, None) is not None}
    spec = SpeedupSpec(
        experiment=exp.name,
        nranks=parse_int_list(args.np, "--np"),
        sizes=parse_int_list(args.sizes, f"--{exp.size_name}") if args.sizes else None,
        variants=[v for v in args.variants.split(",") if v] if args.variants else None,
        repeats=args.repeats,
        warmup=args.warmup,
        scaling=args.scaling,
        params=params,
        backends=[b for b in args.backend.split(",") if b] if getattr(args, "backend", None) else None,
        placements=[p for p in args.place.split(",") if p] if args.place else None,
        trace=bool(getattr(args, "trace", False)),
    )
    return spec.resolved()


def main(args: argparse.Namespace) -> int:
    spec = build_spec(args)  # bad input fails here, before any mpiexec starts
    largest = max(spec.nranks)
    if not mpi.launched_by_mpiexec():
        chosen = _mpijob.implementations_of(args)  # unknown or not installed: said before any job
        if args.yield_while_waiting:
            os.environ[launch.YIELD_VARIABLE] = "1"
        if len(chosen) > 1 or (spec.world_bound() and len(spec.nranks) > 1):
            return _parts(args, spec, chosen)
        return launch.run_under_mpiexec(largest, args.argv, timeout_s=args.timeout,
                                        transport=_mpijob.transport(args), impl=chosen[0],
                                        mpi_args=_preload(args, chosen[0]))
    if args.mpi and WORLD_PART_VARIABLE not in os.environ:
        named = _mpijob.implementation(args)
        if named.name != implementations.current().name:
            raise ValueError(f"--mpi {args.mpi}: this command runs inside an mpiexec of "
                             f"{implementations.current().name}; drop --mpi, or start it from a shell")
    return _run_in_world(args, spec)


def _preload(args: argparse.Namespace, impl) -> list[str]:
    """With ``--trace``, the ``mpiexec`` arguments that preload the interposer (built with
    *impl*'s mpicc) into the ranks, as ``mpiworkbench trace`` does; else none."""
    if not args.trace:
        return []
    return impl.env_args("LD_PRELOAD", str(library.build(impl)))


def _part_argv(argv: list[str], json_path: str) -> list[str]:
    """*argv* with ``--json`` (and ``--plot``) replaced: a part writes its JSON for the parent."""
    out: list[str] = []
    skip = False
    for item in argv:
        if skip:
            skip = False
            continue
        if item in ("--json", "--plot"):
            skip = True
            continue
        if item.startswith(("--json=", "--plot=")):
            continue
        out.append(item)
    return out + ["--json", json_path]


def _parts(args: argparse.Namespace, spec, chosen: list) -> int:
    """One ``mpiexec`` per MPI implementation of *chosen* — per rank count, when a backend
    needs a world of its own (numba-mpi) — then one result from all of them: the table,
    ``--json`` (rewritten after every job) and ``--plot`` as usual. A failing job is named,
    its implementation's remaining jobs skipped, the other implementations still run."""
    per_count = bool(spec.world_bound()) and len(spec.nranks) > 1
    if per_count:
        print(
            f"# {', '.join(spec.world_bound())} talks only on MPI_COMM_WORLD: every rank count runs in a world "
            "of its own (one mpiexec each), for every backend alike",
            file=sys.stderr, flush=True,
        )
    _, result = begin_experiment(spec)
    code = 0
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-speedup-") as tmp:
        for impl in chosen:
            for n in spec.nranks if per_count else ["all"]:
                path = str(Path(tmp) / f"{impl.name}-{n}.json")
                os.environ[WORLD_PART_VARIABLE] = str(n)
                try:
                    job = launch.run_under_mpiexec(max(spec.nranks) if n == "all" else n, _part_argv(args.argv, path),
                                                   timeout_s=args.timeout, transport=_mpijob.transport(args),
                                                   impl=impl, mpi_args=_preload(args, impl))
                finally:
                    os.environ.pop(WORLD_PART_VARIABLE, None)
                if job != 0:
                    code = code or job
                    where = "" if n == "all" else f" on {n} rank(s)"
                    result.failed[impl.name] = f"the mpiexec job of {impl.title}{where} exited with code {job}"
                    print(f"# {impl.title} failed: {result.failed[impl.name]}; its other points are not measured",
                          file=sys.stderr, flush=True)
                    break
                part = analysis.load(path)
                for point in part.points:
                    if per_count:
                        point["world"] = "own"
                    result.add(point)
                result.environments.update(part.environments)
                if args.json not in (None, "-"):
                    analysis.save(result, args.json)
    if not result.points:
        print("# no job measured any point", file=sys.stderr)
        return code or 1
    return _finish(args, result) or code


def _finish(args: argparse.Namespace, result) -> int:
    """Rank 0's ending: the table (and ratios to C), the failed checks, ``--json``, ``--plot``."""
    exp = experiments.get(result.experiment)
    if len(result.environments) > 1:
        print("# MPI implementations side by side (each its own curves, speedups and ratios to C):")
        for name, library in result.environments.items():
            print(f"#   {name}: {library.get('library')}")
    print(analysis.format_table(result, exp.size_name))
    ratios = analysis.format_ratio_table(result, exp.size_name)
    if ratios:
        print("\n# wall-clock time / the same variant on the C backend (thesis: C 8 to 10 times faster)")
        print(ratios)
    factors = format_pop(result, exp.size_name)
    if factors:
        print("\n# POP factors of one traced run per point (1 = ideal; mpiworkbench.trace.efficiency)")
        print(factors)
    failed = [p for p in result.points if p.get("verify") and not p["verify"].get("ok", True)]
    for p in failed:
        print(f"verification FAILED for {p['variant']} on {p['nranks']} rank(s): {p['verify']}", file=sys.stderr)
    for name, why in result.failed.items():
        print(f"# FAILED {name}: {why}", file=sys.stderr)
    if args.json == "-":
        sys.stdout.write(analysis.to_json(result))
    elif args.json:
        analysis.save(result, args.json)
    if args.plot:
        from mpiworkbench.plot.speedup import backend_figure, scaling_figure  # lazy: matplotlib, only for --plot

        figure = backend_figure if analysis.ratio_rows(result) else scaling_figure
        figure(result, exp.size_name, title=exp.title).savefig(args.plot, dpi=100)
    return 1 if failed else 0


def _run_in_world(args: argparse.Namespace, spec) -> int:
    from mpiworkbench.speedup.point import run_point  # lazy: --help imports every subcommand's module; only a run in MPI needs it

    comm = mpi.world()
    exp = experiments.get(spec.experiment)
    part = os.environ.get(WORLD_PART_VARIABLE)
    if part is not None:  # one part of several (see _parts): one rank count, or every one
        spec.nranks = spec.nranks if part == "all" else [int(part)]
        args.plot = None
    if max(spec.nranks) > comm.size:
        raise ValueError(
            f"--np asks for {max(spec.nranks)} ranks but this MPI world has {comm.size}; "
            "launch with at least that many or drop --np counts"
        )
    root = comm.rank == 0

    under = f"{implementations.current().name} " if part == "all" else ""  # one implementation of several

    def progress(result, point, i, total):
        if root:
            mark = " (oversubscribed)" if point.get("oversubscribed") else ""
            print(
                f"[{i}/{total}] {under}{analysis.placed(point['variant'], point)} {exp.size_name}={point['size']} "
                f"{analysis.where_text(point)}: "
                f"median {point['median']:.4g} s, speedup {point['speedup']:.3f}{mark}",
                file=sys.stderr,
                flush=True,
            )

    def measure(point):  # the command reports each traced point's factors (pop), never its Trace: none kept
        record = run_point(point, comm)
        record.pop(analysis.TRACE_KEY, None)
        return record

    result = run_experiment(spec, measure, on_point=progress)
    mpi_library = machine.mpi_library()  # not `library`: that names the interposer's module here
    result.environments[mpi_library["mpi"]] = mpi_library
    if root and part is not None:  # the parent prints and checks the whole result
        analysis.save(result, args.json)
        return 0
    if root:
        return _finish(args, result)
    return 0
