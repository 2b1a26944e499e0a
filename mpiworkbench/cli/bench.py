"""``mpiworkbench bench NAME --np N --backend B[,B…] [--sizes 8:8M] [--json FILE] [--csv FILE]``.

Runs one micro-benchmark on every listed backend, size by size (backends interleaved),
printing OSU-style rows and rewriting the JSON/CSV after every size, so an interrupted
sweep keeps what it measured. Works under an existing ``mpiexec`` or launches one;
``--launches K`` launches it K times and reports the median over launches.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from mpiworkbench.cli import _mpijob
from mpiworkbench.core.machine import THREAD_LEVELS
#: Set by ``--launches``' parent process for each launch: where that launch writes its
#: document, and "k/K" for its header.
PART_ENV, LAUNCH_ENV = "MPIWORKBENCH_BENCH_PART", "MPIWORKBENCH_BENCH_LAUNCH"


def register(subparsers) -> None:
    from mpiworkbench.backends import implemented_names
    from mpiworkbench.bench.catalog import BENCHMARKS
    p = subparsers.add_parser(
        "bench",
        help="OSU-style micro-benchmarks on every backend, C as the reference",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("name", choices=sorted(BENCHMARKS), metavar="NAME",
                   help="benchmark: " + ", ".join(BENCHMARKS))
    _mpijob.add_mpi_arguments(p, default_np=2)
    p.add_argument("--backend", default=",".join(implemented_names()),
                   help="comma-separated backends, or api:NAME to time NAME through the unified "
                        "interface (default: every backend implemented here, %(default)s)")
    p.add_argument("--sizes", default=None,
                   help="MIN:MAX (powers of two) or a list a,b,c; units K/M; default 8:8M")
    p.add_argument("--json", default=None, help="write the results document here (rewritten per size)")
    p.add_argument("--csv", default=None, help="write tidy rows as CSV here (rewritten per size)")
    p.add_argument("--iterations", type=int, default=None, help="timed iterations at every size (default: OSU rule)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up iterations at every size (default: OSU rule)")
    p.add_argument("--time-cap", type=float, default=2.0, help="max seconds of timed loop per size and backend")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="time every size K times, backends interleaved, and report the median "
                        "(each repeat is kept in the JSON; default 1)")
    p.add_argument("--mode", choices=("osu", "block"), default="osu",
                   help="collectives: time each call with a barrier after it (osu) or the whole loop (block)")
    p.add_argument("--window", type=int, default=64, help="messages in flight for bw/bibw (OSU: 64)")
    p.add_argument("--thread-level", choices=THREAD_LEVELS, default="single",
                   help="MPI thread level for every backend (default single, as OSU's C MPI_Init; "
                        "mpi4py's own default is multiple, ~1.5 us dearer per small collective)")
    p.add_argument("--launches", type=int, default=1, metavar="K",
                   help="start mpiexec K times and report the median over launches, each launch kept "
                        "in the JSON (a whole launch can run in a slow state of a shared or virtual "
                        "machine); needs the command to start mpiexec itself (--np, from a shell)")
    p.add_argument("--no-load-check", action="store_true", help="skip the 0.3 s background-load sample")
    p.add_argument("--quiet", action="store_true", help="print no rows, only the file names")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from mpiworkbench.bench.method import Policy, parse_sizes
    sizes = parse_sizes(args.sizes)
    policy = Policy(iterations=args.iterations, warmup=args.warmup, time_cap_s=args.time_cap,
                    collective_mode=args.mode, window=args.window, repeats=args.repeat)
    _select_thread_level(args.thread_level)
    if args.launches < 1:
        raise ValueError(f"--launches must be at least 1; got {args.launches}")
    if args.launches > 1 and PART_ENV not in os.environ:
        from mpiworkbench.core import launch
        if not launch.needs_launch(args.np):
            raise ValueError(
                f"--launches {args.launches} starts mpiexec {args.launches} times, so it cannot run "
                "inside an mpiexec that is already running; start the command from a shell with "
                "--np N, or drop --launches"
            )
        return _several_launches(args)
    return _mpijob.run(args, lambda comm: _body(comm, args, sizes, policy))


def _several_launches(args: argparse.Namespace) -> int:
    """Launch the sweep ``args.launches`` times; merge and write after every launch."""
    from mpiworkbench.core import launch
    from mpiworkbench.bench import results
    docs: list[dict] = []
    merged: dict | None = None
    with tempfile.TemporaryDirectory(prefix="wbbench-") as tmp:
        for k in range(1, args.launches + 1):
            part = Path(tmp) / f"launch{k}.json"
            extra = {PART_ENV: str(part), LAUNCH_ENV: f"{k}/{args.launches}"}
            os.environ.update(extra)
            try:
                code = launch.run_under_mpiexec(args.np, args.argv, timeout_s=args.timeout,
                                                transport=_mpijob.transport(args))
            finally:
                for name in extra:
                    os.environ.pop(name, None)
            if part.exists():
                docs.append(results.load(part))
                merged = results.merge_launches(docs, planned=args.launches)
                _write(merged, args.json, args.csv)
            if code != 0:
                written = args.json or args.csv
                kept = f"{written} keeps the {len(docs)} launch(es) that wrote rows" if docs and written else "nothing was written"
                print(f"# launch {k}/{args.launches} failed (exit {code}); {kept}", file=sys.stderr)
                return code
    if merged is None:
        print("# no launch wrote any rows", file=sys.stderr)
        return 1
    if not args.quiet:
        print(f"\n# median over {len(docs)} launches [min-max of the launches], us")
        print(results.format_rows(merged["rows"]))
        _print_fit(merged)
    for path in (args.json, args.csv):
        if path:
            print(f"# wrote {path}")
    return 0


def _write(doc: dict, json_path: str | None, csv_path: str | None) -> None:
    """Rewrite the results files asked for (after every size, or every launch)."""
    from mpiworkbench.bench import results
    if json_path:
        results.write_json(json_path, doc)
    if csv_path:
        results.write_csv(csv_path, doc)


def _print_then(doc: dict) -> None:
    """What report 003 printed for the ring test (Table 2), beside this run's rows."""
    if doc.get("benchmark") != "ring":
        return
    from mpiworkbench import seeds

    data = seeds.load("heat-report")
    table = data["table_2"]
    for where in table["latency_s"]:
        print(f"# then: report 003 Table 2, {where}: latency {table['latency_s'][where] * 1e6:.3g} us, "
              f"bandwidth {table['bandwidth_MB_s'][where]:.4g} MB/s")
    print(f"#   measured on {data['machine'].split(';')[0]}; {table['caveat']}")


def _print_fit(doc: dict) -> None:
    _print_then(doc)
    if doc.get("fit"):
        print("# least-squares fit t = latency + size/bandwidth (thesis eq. 5.1, Table 5.1)")
        for backend, f in doc["fit"].items():
            bw = "none (time does not grow with size)" if f["bandwidth_MBps"] is None else f"{f['bandwidth_MBps']:9.1f} MB/s"
            print(f"#   {backend:<11} latency {f['latency_us']:9.2f} us  bandwidth {bw}"
                  f"  rms residual {f['rms_residual_us']:.2f} us")


def _select_thread_level(level: str) -> None:
    """Ask for *level* before MPI starts (here and, through the environment, in mpiexec's ranks)."""
    os.environ["MPI4PY_RC_THREAD_LEVEL"] = level
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py

        mpi4py.rc.thread_level = level


def _body(comm, args, sizes, policy) -> int:
    from mpiworkbench.bench import results
    from mpiworkbench.bench.buffers import Buffers
    from mpiworkbench.bench.harness import BenchRun
    run = BenchRun(args.name, args.backend.split(","), sizes, policy, comm=comm,
                   measure_load=not args.no_load_check)
    root = comm.Get_rank() == 0
    part = os.environ.get(PART_ENV)  # one launch of --launches K: its document goes there
    json_path, csv_path = (part, None) if part else (args.json, args.csv)
    got = run.environment["thread_level"]
    if root:
        env = run.environment
        if got != args.thread_level:
            print(f"# note: asked for thread level {args.thread_level}, MPI gave {got}", file=sys.stderr)
        if not args.quiet:
            launch_of = f" (launch {os.environ[LAUNCH_ENV]})" if part else ""
            print(f"# mpiworkbench bench {run.bench.name}: {run.bench.title}{launch_of}")
            print(f"# {env['mpi_library']}; np={env['np']}; thread level {got}; "
                  f"collective mode {policy.collective_mode}; MB = 10^6 B")
            print(f"# cores available {env['cores_available']}; foreign load {env['foreign_load_cores']} cores")
            method = run.policy.describe()
            timing = ("every rank times its Sendrecv loop as one block" if run.bench.name == "sendrecv"
                      else method["timing"][run.bench.kind])
            print(f"# timing: {timing}; warm-up outside the timer; "
                  f"{method['barrier']}")
            print(f"# buffers: {Buffers.describe()}")
            if policy.repeats > 1:
                print(f"# repeats: {method['repeats']}")
            for name, why in run.skipped.items():
                print(f"# skipped {name}: {why}")
        for warning in env["warnings"]:
            print(f"# WARNING: {warning}", file=sys.stderr)
    header_done = False
    while not run.done:
        rows = run.step()
        if root:
            doc = run.summary()
            _write(doc, json_path, csv_path)
            if not args.quiet:
                text = results.format_rows(rows)
                print(text if not header_done else text.split("\n", 1)[1], flush=True)
                header_done = True
    if root:
        doc = run.summary()
        if not args.quiet:
            _print_fit(doc)
        if part is None:
            for path in (args.json, args.csv):
                if path:
                    print(f"# wrote {path}")
    return 0
