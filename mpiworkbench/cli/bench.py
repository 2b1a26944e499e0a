"""``mpiworkbench bench NAME --np N --backend B[,B…] [--sizes 8:8M] [--mpi M[,M…]] [--json FILE] [--csv FILE]``.

Runs one micro-benchmark on every listed backend, size by size (backends interleaved),
printing OSU-style rows and rewriting the JSON/CSV after every size, so an interrupted
sweep keeps what it measured. Works under an existing ``mpiexec`` or launches one;
``--launches K`` launches it K times and reports the median over launches.

``--mpi mpich,openmpi,impi`` measures the same sweep under each MPI implementation
(:mod:`mpiworkbench.core.implementations`): one ``mpiexec`` job each, with that
implementation's own launcher and library, and one document side by side
(:func:`mpiworkbench.bench.results.side_by_side`): every row names its implementation
(``mpi``), every implementation's own C backend is its reference (``overhead_vs_c``, the
Table 5.1 fit per implementation in ``fit_by_mpi``), ``environments`` holds each one's
environment record (``library_version`` included) while ``environment`` and ``fit`` stay the
first one's. The files are rewritten after every job (with ``--launches K``, jobs go
launch by launch, the implementations interleaved within each); a job that fails is named,
the others still run, their rows are kept and the exit code is not 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from mpiworkbench import seeds
from mpiworkbench.backends import implemented_names
from mpiworkbench.bench import results
from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.catalog import BENCHMARKS
from mpiworkbench.bench.method import Policy, parse_sizes
from mpiworkbench.cli import _mpijob
from mpiworkbench.core import launch
from mpiworkbench.core.machine import THREAD_LEVELS

#: Set by the parent process of ``--launches`` or of several ``--mpi`` for each job: where
#: that job writes its document, and what it is for its header ("Open MPI, launch k/K").
PART_ENV, LAUNCH_ENV = "MPIWORKBENCH_BENCH_PART", "MPIWORKBENCH_BENCH_LAUNCH"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="OSU-style micro-benchmarks on every backend, C as the reference",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("name", choices=sorted(BENCHMARKS), metavar="NAME",
                   help="benchmark: " + ", ".join(BENCHMARKS))
    _mpijob.add_mpi_arguments(p, default_np=2, several=True)
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
    sizes = parse_sizes(args.sizes)
    policy = Policy(iterations=args.iterations, warmup=args.warmup, time_cap_s=args.time_cap,
                    collective_mode=args.mode, window=args.window, repeats=args.repeat)
    _select_thread_level(args.thread_level)
    if args.launches < 1:
        raise ValueError(f"--launches must be at least 1; got {args.launches}")
    if PART_ENV in os.environ:  # one job of several: the parent chose its implementation
        args.mpi = None
    else:
        chosen = _mpijob.implementations_of(args)  # unknown or not installed: said before any job
        if args.launches > 1 or len(chosen) > 1:
            if not launch.needs_launch(args.np):
                what = (f"--launches {args.launches} starts mpiexec {args.launches} times" if args.launches > 1
                        else f"--mpi {args.mpi} starts one mpiexec per implementation")
                raise ValueError(
                    f"{what}, so it cannot run inside an mpiexec that is already running; start the "
                    "command from a shell with --np N" + (", or drop --launches" if args.launches > 1 else ""))
            return _several_jobs(args, chosen)
    return _mpijob.run(args, lambda comm: _body(comm, args, sizes, policy))


def _several_jobs(args: argparse.Namespace, chosen: list) -> int:
    """One ``mpiexec`` job per launch and implementation (implementations interleaved within
    a launch); merge and write after every job. An implementation whose job fails is named
    and not launched again; the others go on."""
    docs: dict[str, list[dict]] = {impl.name: [] for impl in chosen}
    failed: dict[str, str] = {}
    merged: dict | None = None
    code = 0
    with tempfile.TemporaryDirectory(prefix="wbbench-") as tmp:
        for k in range(1, args.launches + 1):
            for impl in (i for i in chosen if i.name not in failed):
                part = Path(tmp) / f"{impl.name}-launch{k}.json"
                label = ", ".join(([impl.title] if len(chosen) > 1 else [])
                                  + ([f"launch {k}/{args.launches}"] if args.launches > 1 else []))
                extra = {PART_ENV: str(part), LAUNCH_ENV: label}
                os.environ.update(extra)
                try:
                    job = launch.run_under_mpiexec(args.np, args.argv, timeout_s=args.timeout,
                                                   transport=_mpijob.transport(args), impl=impl)
                finally:
                    for name in extra:
                        os.environ.pop(name, None)
                if part.exists():
                    docs[impl.name].append(results.load(part))
                if job != 0:
                    code = code or job
                    failed[impl.name] = f"the mpiexec job of {label or impl.title} exited with code {job}"
                merged = _merged(docs, failed, args.launches)
                if merged is not None:
                    _write(merged, args.json, args.csv)
                if job != 0:
                    written = args.json or args.csv
                    kept = (f"{written} keeps the rows of the jobs that wrote some" if merged and written
                            else "nothing was written")
                    print(f"# {impl.title} failed: {failed[impl.name]}; {kept}", file=sys.stderr)
    if merged is None:
        print("# no job wrote any rows", file=sys.stderr)
        return code or 1
    if not args.quiet:
        several = len(merged.get("mpis", [])) > 1
        print("\n# " + ", ".join((["MPI implementations side by side"] if several else [])
                                 + ([f"median over {max(map(len, docs.values()))} launches [min-max of the launches]"]
                                    if args.launches > 1 else [])) + ", us")
        for name, env in merged["environments"].items():
            print(f"#   {name}: {env.get('mpi_library')}")
        print(results.format_rows(_side_by_side_order(merged["rows"])))
        _print_fit(merged)
    for name, why in failed.items():
        print(f"# FAILED {name}: {why}", file=sys.stderr)
    _say_written(args)
    return code


def _merged(docs: dict[str, list[dict]], failed: dict[str, str], launches: int) -> dict | None:
    """The document of every job so far: launches merged per implementation, then the
    implementations side by side (a run of one implementation: its document as before)."""
    per_mpi = [results.merge_launches(mine, planned=launches) if launches > 1 else mine[0]
               for mine in docs.values() if mine]
    if not per_mpi:
        return None
    if len(docs) == 1:
        return per_mpi[0]
    return results.side_by_side(per_mpi, failed, planned=len(docs))


def _side_by_side_order(rows: list[dict]) -> list[dict]:
    """Rows by size, then backend, then implementation: one backend's implementations adjacent."""
    first = {}
    for i, r in enumerate(rows):
        first.setdefault(("backend", r["backend"]), i)
        first.setdefault(("mpi", r.get("mpi")), i)
    return sorted(rows, key=lambda r: (r["size"], first[("backend", r["backend"])], first[("mpi", r.get("mpi"))]))


def _write(doc: dict, json_path: str | None, csv_path: str | None) -> None:
    """Rewrite the results files asked for (after every size, or every launch)."""
    if json_path:
        results.write_json(json_path, doc)
    if csv_path:
        results.write_csv(csv_path, doc)


def _print_then(doc: dict) -> None:
    """What report 003 printed for the ring test (Table 2), beside this run's rows."""
    if doc.get("benchmark") != "ring":
        return
    data = seeds.load("heat-report")
    table = data["table_2"]
    for where in table["latency_s"]:
        print(f"# then: report 003 Table 2, {where}: latency {table['latency_s'][where] * 1e6:.3g} us, "
              f"bandwidth {table['bandwidth_MB_s'][where]:.4g} MB/s")
    print(f"#   measured on {data['machine'].split(';')[0]}; {table['caveat']}")


def _print_fit(doc: dict) -> None:
    _print_then(doc)
    fits = doc.get("fit_by_mpi") or {"": doc.get("fit") or {}}
    if any(fits.values()):
        print("# least-squares fit t = latency + size/bandwidth (thesis eq. 5.1, Table 5.1)"
              + (", per MPI implementation" if len(fits) > 1 else ""))
        labels = {(name, backend): f"{name} {backend}" if len(fits) > 1 else backend
                  for name, fit in fits.items() for backend in fit}
        width = max([11, *map(len, labels.values())])
        for name, fit in fits.items():
            for backend, f in fit.items():
                label = labels[(name, backend)]
                bw = "none (time does not grow with size)" if f["bandwidth_MBps"] is None else f"{f['bandwidth_MBps']:9.1f} MB/s"
                print(f"#   {label:<{width}} latency {f['latency_us']:9.2f} us  bandwidth {bw}"
                      f"  rms residual {f['rms_residual_us']:.2f} us")


def _select_thread_level(level: str) -> None:
    """Ask for *level* before MPI starts (here and, through the environment, in mpiexec's ranks)."""
    os.environ["MPI4PY_RC_THREAD_LEVEL"] = level
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py

        mpi4py.rc.thread_level = level


def _body(comm, args, sizes, policy) -> int:
    from mpiworkbench.bench.harness import BenchRun  # lazy: --help imports every subcommand's module; only a run needs the harness

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
            launch_of = f" ({os.environ[LAUNCH_ENV]})" if part and os.environ.get(LAUNCH_ENV) else ""
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
            _say_written(args)
    return 0


def _say_written(args: argparse.Namespace) -> None:
    """``# wrote FILE`` for each results file (to stderr when the JSON itself goes to stdout)."""
    for path in (args.json, args.csv):
        if path and path != "-":
            print(f"# wrote {path}", file=sys.stderr if "-" in (args.json, args.csv) else sys.stdout)
