"""``mpiworkbench syntax``: run every side-by-side snippet and report what each column can do.

    mpiworkbench syntax --np 3 [--op NAME] [--json FILE]

For each (operation, column): ``ok`` (ran, every rank's result matched the reference),
``mismatch``, ``failed`` (with the error), ``unsupported`` (with the reason) or ``skipped``
(too few ranks). Columns: C, mpi4py-obj, mpi4py-buf, numba-mpi, mpi4jax (where installed), and the five historic
modules as labelled emulations on mpi4py (syntax only).
"""

from __future__ import annotations

import argparse

from mpiworkbench.cli import _mpijob
from mpiworkbench.syntax.lessons import COLUMNS, LESSONS, OPERATION_LESSON
_SYMBOLS = {"ok": "ok", "mismatch": "MISMATCH", "failed": "FAILED", "unsupported": "-", "skipped": "skip"}


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "syntax",
        help="run every side-by-side syntax snippet (C, mpi4py, numba-mpi, historic emulations)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _mpijob.add_mpi_arguments(parser)
    parser.add_argument("--op", default=None,
                        help="one operation (send, recv, …, alltoall) or lesson (hello, send_recv, …)")
    parser.add_argument("--column", action="append", default=None,
                        help="only this column (repeatable), e.g. --column c --column mpi4py-buf")
    parser.add_argument("--json", default=None, help="write the full report as JSON to FILE ('-' for stdout)")
    parser.set_defaults(func=_main)


def _lessons_for(op: str | None) -> list[str] | None:
    if op is None:
        return None
    if op in LESSONS:
        return [op]
    if op in OPERATION_LESSON:
        return [OPERATION_LESSON[op]]
    raise ValueError(f"unknown --op {op!r}; choose an operation {sorted(OPERATION_LESSON)} or a lesson {list(LESSONS)}")


def _main(args: argparse.Namespace) -> int:
    lessons_to_run = _lessons_for(args.op)  # validate before launching mpiexec
    if args.column:
        bad = [c for c in args.column if c not in COLUMNS]
        if bad:
            raise ValueError(f"unknown --column {bad}; choose from {list(COLUMNS)}")
    return _mpijob.run(args, lambda comm: _body(comm, lessons_to_run, args))


def _body(comm, lessons_to_run, args) -> int:
    from mpiworkbench.syntax import execution, tables  # lazy: --help imports every subcommand's module; only a run needs these

    columns = tuple(args.column) if args.column else COLUMNS
    results = execution.run_all(comm, lessons_to_run, columns)
    if comm.Get_rank() != 0:
        return 0
    ops = execution.operation_table(results)
    rows = {lesson: results[lesson] for lesson in results if not LESSONS[lesson].operations}
    print(f"mpiworkbench syntax on {comm.Get_size()} rank(s); historic columns are emulations on mpi4py (syntax only)")
    width = max(len(c) for c in columns) + 1
    print(f"{'operation':11s}" + "".join(f"{c:>{width}s}" for c in columns))
    for name, cells in [*((k, v) for k, v in rows.items()), *ops.items()]:
        print(f"{name:11s}" + "".join(f"{_SYMBOLS[cells[c]['status']]:>{width}s}" for c in columns))
    problems = [(name, c, cell) for name, cells in [*rows.items(), *ops.items()] for c, cell in cells.items()
                if cell["status"] in ("failed", "mismatch")]
    for name, c, cell in problems:
        print(f"  {name} / {c}: {cell['status']}: {cell.get('error', 'result differs from the reference')}")
    print("'-' = unsupported; the reasons are in the JSON report (--json FILE)")
    payload = {
        "ranks": comm.Get_size(),
        "columns": list(columns),
        "historic": {name: {"source": m.source, "emulated": True} for name, m in tables.historic_modules().items()},
        "operations": ops,
        "lessons": results,
    }
    _mpijob.write_json(args.json, payload)
    return 1 if problems else 0
