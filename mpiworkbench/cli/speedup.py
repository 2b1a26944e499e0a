"""``mpiworkbench speedup {inner,wave,cg,bench} --np 1,2[,…] … --json FILE``.

Starts ``mpiexec`` once with the largest rank count; the smaller counts run on
sub-communicators of that world (the same :func:`~mpiworkbench.speedup.point.run_point`
the notebook panel uses). Prints a table like thesis Table 2.1 and writes times,
speedups and efficiencies to JSON.
"""

from __future__ import annotations

import argparse
import sys

from mpiworkbench.speedup import experiments


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
        for p in exp.params:
            sub.add_argument(
                f"--{p.name}", type=p.type, default=None, choices=p.choices or None, help=f"{p.help} (default {p.default})"
            )
        sub.add_argument("--repeats", type=int, default=5, help="timed repetitions per point (median reported)")
        sub.add_argument("--warmup", type=int, default=1, help="untimed runs before the repetitions")
        sub.add_argument("--scaling", choices=experiments.SCALINGS, default=experiments.SCALINGS[0])
        sub.add_argument("--json", default=None, metavar="FILE", help="write the result to FILE ('-' for stdout)")
        sub.add_argument("--timeout", type=float, default=None, help="wall-clock limit of the MPI job in seconds")
        sub.set_defaults(func=main)


def build_spec(args: argparse.Namespace):
    from mpiworkbench.speedup.plan import SpeedupSpec, parse_int_list

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
    )
    return spec.resolved()


def main(args: argparse.Namespace) -> int:
    from mpiworkbench.core import launch, mpi

    spec = build_spec(args)  # bad input fails here, before any mpiexec starts
    largest = max(spec.nranks)
    if not mpi.launched_by_mpiexec():
        return launch.run_under_mpiexec(largest, args.argv, timeout_s=args.timeout)
    return _run_in_world(args, spec)


def _run_in_world(args: argparse.Namespace, spec) -> int:
    from mpiworkbench.core import mpi
    from mpiworkbench.speedup import analysis
    from mpiworkbench.speedup.plan import run_experiment
    from mpiworkbench.speedup.point import run_point

    comm = mpi.world()
    exp = experiments.get(spec.experiment)
    if max(spec.nranks) > comm.size:
        raise ValueError(
            f"--np asks for {max(spec.nranks)} ranks but this MPI world has {comm.size}; "
            "launch with at least that many or drop --np counts"
        )
    root = comm.rank == 0

    def progress(result, point, i, total):
        if root:
            mark = " (oversubscribed)" if point.get("oversubscribed") else ""
            print(
                f"[{i}/{total}] {point['variant']} {exp.size_name}={point['size']} on {point['nranks']} rank(s): "
                f"median {point['median']:.4g} s, speedup {point['speedup']:.3f}{mark}",
                file=sys.stderr,
                flush=True,
            )

    result = run_experiment(spec, lambda p: run_point(p, comm), on_point=progress)
    if root:
        print(analysis.format_table(result, exp.size_name))
        failed = [p for p in result.points if p.get("verify") and not p["verify"].get("ok", True)]
        for p in failed:
            print(f"verification FAILED for {p['variant']} on {p['nranks']} rank(s): {p['verify']}", file=sys.stderr)
        if args.json == "-":
            sys.stdout.write(analysis.to_json(result))
        elif args.json:
            analysis.save(result, args.json)
        return 1 if failed else 0
    return 0
