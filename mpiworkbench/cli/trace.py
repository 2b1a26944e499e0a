"""``mpiworkbench trace``: run any other command with every rank's MPI calls recorded.

    mpiworkbench trace --out wave-trace.json -- wave --np 2 --mesh 33 --steps 3
    mpiworkbench trace --np 3 --otf2 run1/ -- my_program.py ARG …
    mpiworkbench trace --np 2 --mpi openmpi -- my_program.py

launches the command (another ``mpiworkbench`` command, or a Python program of your own) under ``mpiexec`` with the MPI interposer preloaded into the ranks,
records from start to end, gathers the events to rank 0 and writes them as Chrome trace-event
JSON (open it in Perfetto, ui.perfetto.dev, or ``chrome://tracing``); prints a summary. With
``--otf2 DIR`` it also writes an OTF2 archive there (Vampir, the Score-P tools), with the wait
states beside it (``DIR/wait_states.json``).

With ``--analyse`` it says why the run took as long as it did: the wait states per pattern and
rank, the call sites that waited most (the Python lines are recorded while it runs), the POP
efficiency factors and the critical path's shares; printed, and written as JSON to
``--analysis FILE`` (default: beside the trace, ``trace.analysis.json`` for ``--out trace.json``).
``--from TRACE.json`` analyses a trace written before (no command; its lines are not known)::

    mpiworkbench trace --analyse --out wave.json -- wave --np 2 --mesh 33 --steps 50
    mpiworkbench trace --analyse --from wave.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from mpiworkbench import cli
from mpiworkbench.cli._mpijob import add_implementation_argument, implementation
from mpiworkbench.core import launch, mpi
from mpiworkbench.trace import otf2 as otf2_export
from mpiworkbench.trace import recorder
from mpiworkbench.trace.chrome import write_chrome
from mpiworkbench.trace.model import Trace
from mpiworkbench.trace.waits import WaitStates


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trace",
        help="record every rank's MPI calls of another command (Chrome trace JSON)",
        description="Run COMMAND (an mpiworkbench command, e.g. `wave --np 2 --mesh 33`, or a Python "
        "program, e.g. `my_program.py ARG`) with the MPI interposer preloaded, record every MPI call of "
        "every rank and write the trace as Chrome trace-event JSON (and OTF2 with --otf2).",
    )
    parser.add_argument("--np", type=int, default=None,
                        help="ranks for a Python program (an mpiworkbench command says its own with --np)")
    parser.add_argument("--out", metavar="FILE", default="trace.json", help="where to write the JSON (default trace.json)")
    parser.add_argument("--otf2", metavar="DIR", default=None,
                        help="also write an OTF2 archive in DIR (new or empty; needs pip install 'mpiworkbench[otf2]')")
    parser.add_argument("--analyse", action="store_true",
                        help="print and write the wait states, POP efficiency factors and critical path")
    parser.add_argument("--analysis", metavar="FILE", default=None,
                        help="where --analyse writes its JSON (default: beside the trace, NAME.analysis.json)")
    parser.add_argument("--from", dest="source", metavar="TRACE", default=None,
                        help="with --analyse: analyse this trace JSON (written by mpiworkbench trace) instead of running a command")
    parser.add_argument("--capacity", type=int, default=None,
                        help="events each rank can record before further calls are only counted (default 1e6)")
    add_implementation_argument(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- then the mpiworkbench command, or the Python program (FILE.py ARG …), to trace")
    parser.set_defaults(func=run)


def _np_of(command: list[str]) -> int:
    for i, word in enumerate(command):
        if word == "--np" and i + 1 < len(command):
            return int(command[i + 1])
        if word.startswith("--np="):
            return int(word.split("=", 1)[1])
    return 1


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else list(args.command)
    if args.source is not None:
        if command or not args.analyse:
            raise ValueError("--from TRACE analyses a saved trace: give it with --analyse and without a command")
        return _analyse_saved(args.source, args.analysis)
    if not command or command[0] == "trace":
        raise ValueError("name the command to trace after --, e.g. `mpiworkbench trace -- wave --np 2 --mesh 33`")
    if args.capacity is not None and args.capacity < 1:
        raise ValueError(f"--capacity must be at least 1 event; got {args.capacity}")
    if _is_program(command):
        if not os.path.isfile(command[0]):
            raise ValueError(f"no Python program {command[0]!r} to trace: name an existing FILE.py")
        np_ = 1 if args.np is None else args.np
    else:
        parsed = cli.build_parser().parse_args(command)
        cli.check_outputs(parsed)  # the traced command's own files, too
        own = getattr(parsed, "mpi", None)
        if own and args.mpi and own != args.mpi:
            raise ValueError(f"--mpi {args.mpi} disagrees with the traced command's --mpi {own}: give the "
                             "implementation once")
        args.mpi = args.mpi or own
        np_ = _np_of(command)
        if args.np is not None and args.np != np_:
            raise ValueError(f"--np {args.np} disagrees with the traced command's --np {np_}: give the "
                             "ranks once, to the command (`trace -- wave --np 2 …`)")
    if np_ < 1:
        raise ValueError(f"--np must be at least 1; got {np_}")
    if args.otf2 is not None:
        _check_otf2(args.otf2)  # before the job: a run must not end in an archive it cannot write
    impl = implementation(args)  # the traced command's --mpi, or trace's own, or $MPIWORKBENCH_MPI
    if launch.needs_launch(np_):
        from mpiworkbench.trace.library import build  # lazy: core.cbuild (subprocess, hashlib) only when a job starts

        argv = ["trace", "--out", args.out, *(["--otf2", args.otf2] if args.otf2 is not None else []),
                *(["--analyse"] if args.analyse else []),
                *(["--analysis", args.analysis] if args.analysis is not None else []),
                *(["--capacity", str(args.capacity)] if args.capacity else []),
                *(["--np", str(args.np)] if args.np is not None else []), "--", *command]
        # the interposer built with this implementation's mpicc, preloaded its launcher's way
        return launch.run_under_mpiexec(np_, argv, impl=impl, mpi_args=impl.env_args("LD_PRELOAD", str(build(impl))))
    return _traced(command, args.out, args.capacity, args.otf2, args.analyse, args.analysis)


def _is_program(command: list[str]) -> bool:
    """A Python program of the user's (``FILE.py …``) rather than an mpiworkbench command."""
    return command[0].endswith(".py")


def _run_program(command: list[str]) -> int:
    """Run ``FILE.py ARG …`` in this process as ``python FILE.py ARG …`` would; its exit code."""
    import runpy

    argv = sys.argv
    sys.argv = list(command)
    try:
        runpy.run_path(command[0], run_name="__main__")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    return 0


def _check_otf2(directory: str) -> None:
    """Refuse (``ValueError``, exit code 2) an OTF2 destination that cannot be written, or a
    missing ``otf2`` package, before any rank starts."""
    otf2_export.check_destination(directory)
    try:
        otf2_export.require_otf2()
    except ImportError as exc:
        raise ValueError(f"--otf2 {directory!r}: {exc}") from None


def _traced(command: list[str], out: str, capacity: int | None, otf2_dir: str | None = None,
            analyse: bool = False, analysis: str | None = None) -> int:
    # with --analyse the recorder records the calls' Python lines too (trace.sites)
    recorder.start(capacity or recorder.DEFAULT_CAPACITY, lines=analyse or recorder.LINES)
    try:
        code = _run_program(command) if _is_program(command) else cli.main(command)
    except BaseException:
        recorder.stop()
        raise
    trace = recorder.finish(mpi.world())
    if trace is not None:
        write_chrome(trace, out)
        what = " ".join(command) if _is_program(command) else "mpiworkbench " + " ".join(command)
        print(f"trace of `{what}`: {trace.summary()}; written to {out}", flush=True)
        overflow = trace.overflow()
        if overflow:
            print(f"mpiworkbench trace: warning: {overflow}", file=sys.stderr, flush=True)
        waits = trace.wait_states() if analyse or otf2_dir is not None else None  # once, for both
        if otf2_dir is not None:
            # what it holds, said from the trace it was written from (the tests read archives
            # back; reading every archive again here would double the cost of a big one)
            anchor = otf2_export.write_otf2(trace, otf2_dir, waits=waits)
            print(f"OTF2 archive written to {anchor} ({trace.nranks} locations; {len(trace)} calls, "
                  f"{len(trace.messages())} messages; wait states beside it)", flush=True)
        if analyse:
            _write_analysis(trace, analysis or _beside(out), what, waits)
    return code


def _beside(trace_path: str) -> str:
    """``run.json`` → ``run.analysis.json`` (beside it)."""
    path = Path(trace_path)
    return str(path.with_name((path.stem if path.suffix == ".json" else path.name) + ".analysis.json"))


def analysis(trace: Trace, top: int = 20, waits: WaitStates | None = None) -> dict:
    """What ``--analyse`` writes (JSON-ready): ``nranks``, ``runtime_s``, ``wait_states``
    (:meth:`WaitStates.to_dict <mpiworkbench.trace.waits.WaitStates.to_dict>`), ``efficiency``
    (the POP factors), ``critical_path`` (:meth:`CriticalPath.to_dict
    <mpiworkbench.trace.critical.CriticalPath.to_dict>`) and ``text`` (what is printed); the
    calls' lines are the trace's (``trace.sites``); the three share the trace's one
    :meth:`~mpiworkbench.trace.model.Trace.dependencies`. *waits*: ``trace.wait_states()``, when
    already computed."""
    waits = trace.wait_states() if waits is None else waits
    pop, path = trace.efficiency(), trace.critical_path()
    text = "\n".join([waits.text(), pop.text(), path.text()])
    return {"nranks": trace.nranks, "runtime_s": pop.runtime, "wait_states": waits.to_dict(top),
            "efficiency": pop.to_dict(), "critical_path": path.to_dict(top), "text": text}


def _write_analysis(trace: Trace, destination: str, what: str, waits: WaitStates | None = None) -> None:
    result = {"trace": what, **analysis(trace, waits=waits)}
    print(result["text"], flush=True)
    Path(destination).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(f"analysis written to {destination}", flush=True)


def _analyse_saved(source: str, destination: str | None) -> int:
    try:
        data = json.loads(Path(source).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"--from {source!r}: cannot read a trace from it ({exc}); name a JSON file written by "
                         "mpiworkbench trace --out") from None
    _write_analysis(Trace.from_chrome(data), destination or _beside(source), source)
    return 0
