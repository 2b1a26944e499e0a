"""Run the syntax snippets on a communicator and check every rank's result.

Collective: every rank of *comm* calls :func:`run_lesson` with the same arguments. Each
snippet runs on every rank; rank 0 receives a report per column — ``ok`` (ran, and every
rank's result matched :func:`~mpiworkbench.syntax.lessons.expected`), ``mismatch``,
``failed`` (raised), ``unsupported`` (the column lacks the call; the reason says why) or
``skipped`` (too few ranks). Engine-side code: no ipyparallel, no IPython.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import io
import traceback
from typing import Any

import numpy as np

from mpiworkbench.backends import OPERATIONS, BackendUnavailableError, NotSupportedError, backend_class
from mpiworkbench.backends.c.library import c_handle, comm_type
from mpiworkbench.backends.numba_mpi import check_world, fit_status_buffers
from mpiworkbench.core import mpi
from mpiworkbench.syntax import lessons
from mpiworkbench.syntax.historic import bind
from mpiworkbench.syntax.lessons import COLUMNS, CURRENT_COLUMNS, HISTORIC_COLUMNS, LESSONS
_modules: dict[str, Any] = {}
_c_library = None
#: Room for a C snippet's result values and printed text.
_C_RESULT_LEN = 256
_C_TEXT_LEN = 512


def _load_python(lesson: str, column: str):
    path = lessons.snippet_path(lesson, column)
    key = str(path)
    if key not in _modules:
        spec = importlib.util.spec_from_file_location(f"mpiworkbench_snippet_{lesson}_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _modules[key] = module
    return _modules[key]


def c_library():
    """All C snippets, compiled together into one cached library (mpicc)."""
    global _c_library
    if _c_library is None:
        from mpiworkbench.core import cbuild  # lazy: cbuild imports subprocess, hashlib and tempfile, which only a build needs

        sources = sorted(lessons.SNIPPETS.glob("*/c.c"))
        _c_library = cbuild.load("wbsnippets", sources, mpi=True)
    return _c_library


def _run_c(lesson: str, comm):
    func = getattr(c_library(), f"snippet_{lesson}")
    func.argtypes = [comm_type(), ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    func.restype = ctypes.c_int
    if comm.Get_size() * 2 > _C_RESULT_LEN // 2:
        raise ValueError(f"the C snippets handle at most {_C_RESULT_LEN // 4} ranks; got {comm.Get_size()}")
    result = np.zeros(_C_RESULT_LEN)
    text = ctypes.create_string_buffer(_C_TEXT_LEN)
    count = func(c_handle(comm), result.ctypes.data, text, _C_TEXT_LEN)
    return (None if count < 0 else result[:count].copy()), text.value.decode()


def unsupported_reason(lesson: str, column: str, comm) -> str | None:
    """Why *column* cannot run *lesson* on *comm* (``None`` when it can)."""
    info = LESSONS[lesson]
    if comm.Get_size() < info.min_ranks:
        return f"needs at least {info.min_ranks} ranks"
    if column == "mpi4jax":  # installed, yet unavailable under Open MPI's ABI: say so, not fail
        try:
            backend_class(column)
        except BackendUnavailableError as exc:
            return str(exc)
    if lessons.has_snippet(lesson, column):
        if column == "numba-mpi":
            try:
                check_world(comm)
            except NotSupportedError as exc:
                return exc.why
        return None
    if column in HISTORIC_COLUMNS:
        return f"{column} has no {', '.join('MPI_' + op.capitalize() for op in info.operations)} (thesis Table 4.1)"
    cls = backend_class(column)
    for op in info.operations:
        if cls.unsupported.get(op):
            return cls.unsupported[op]
    return "no snippet for this column"


def run_snippet(lesson: str, column: str, comm) -> dict[str, Any]:
    """Run one snippet on this rank (collective over *comm*); this rank's outcome."""
    reason = unsupported_reason(lesson, column, comm)
    if reason is not None:
        status = "skipped" if reason.startswith("needs at least") else "unsupported"
        return {"status": status, "reason": reason}
    stdout = io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout):
            if column == "c":
                result, text = _run_c(lesson, comm)
                print(text, end="")
            elif column in HISTORIC_COLUMNS:
                with bind(comm):
                    result = _load_python(lesson, column).main()
            else:
                if column == "numba-mpi":  # before the snippet compiles, as every numba-mpi user here
                    fit_status_buffers()
                result = _load_python(lesson, column).main(comm)
    except Exception as exc:  # noqa: BLE001 - reported per rank, the report is the point
        return {"status": "failed", "error": f"{type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc(limit=4), "output": stdout.getvalue()}
    got = lessons.normalise(result)
    return {
        "status": "ok",
        "result": None if got is None else got.tolist(),
        "match": lessons.matches(lesson, comm.Get_rank(), comm.Get_size(), result),
        "output": stdout.getvalue(),
    }


def _summarise(lesson: str, column: str, per_rank: list[dict[str, Any]], size: int) -> dict[str, Any]:
    statuses = {r["status"] for r in per_rank}
    report: dict[str, Any] = {"lesson": lesson, "column": column, "ranks": size}
    if "failed" in statuses:
        first = next(r for r in per_rank if r["status"] == "failed")
        report.update(status="failed", error=first["error"], traceback=first.get("traceback", ""))
    elif statuses <= {"unsupported"} or statuses <= {"skipped"}:
        report.update(status=per_rank[0]["status"], reason=per_rank[0]["reason"])
    else:
        ok = all(r.get("match") for r in per_rank)
        report.update(status="ok" if ok else "mismatch")
    report["outputs"] = [r.get("output", "") for r in per_rank]
    report["results"] = [r.get("result") for r in per_rank]
    report["expected"] = [None if (e := lessons.expected(lesson, rank, size)) is None else e.tolist()
                          for rank in range(size)]
    path = lessons.snippet_path(lesson, column)
    report["file"] = str(path.relative_to(lessons.SNIPPETS.parent.parent)) if path.exists() else None
    return report


def run_lesson(lesson: str, comm=None, columns: tuple[str, ...] | list[str] | None = None) -> dict[str, dict] | None:
    """Collective: run *lesson* in every column; rank 0 gets ``{column: report}``, others ``None``."""
    comm = mpi.resolve_comm(comm)
    mpi.checked(comm, lambda: [lessons.snippet_path(lesson, c) for c in (columns or COLUMNS)])
    reports: dict[str, dict] = {}
    for column in columns or COLUMNS:
        outcome = run_snippet(lesson, column, comm)
        per_rank = comm.gather(outcome, root=0)
        if comm.Get_rank() == 0:
            reports[column] = _summarise(lesson, column, per_rank, comm.Get_size())
    return reports if comm.Get_rank() == 0 else None


def run_all(comm=None, lessons_to_run: list[str] | None = None,
            columns: tuple[str, ...] | list[str] | None = None) -> dict[str, dict[str, dict]] | None:
    """Collective: every lesson (or *lessons_to_run*); rank 0 gets ``{lesson: {column: report}}``."""
    out = {}
    for name in lessons_to_run or list(LESSONS):
        out[name] = run_lesson(name, comm, columns)
    return out if out and next(iter(out.values())) is not None else None


def operation_table(results: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """Per (operation, column) view of :func:`run_all`'s lesson results (Table 4.1 rows)."""
    table: dict[str, dict[str, dict]] = {}
    for op in OPERATIONS:
        lesson = lessons.OPERATION_LESSON[op]
        if lesson in results:
            table[op] = {col: {k: v for k, v in rep.items() if k in ("status", "reason", "error", "file", "lesson")}
                         for col, rep in results[lesson].items()}
    return table


def run_on_subcommunicator(lesson: str, nranks: int, columns: tuple[str, ...] | list[str] | None = None):
    """Collective over ``COMM_WORLD``: run *lesson* on the first *nranks* ranks only.

    Used by the widget to pick the number of ranks without restarting the cluster.
    World rank 0 (also rank 0 of the sub-communicator) returns the report.
    """
    world = mpi.world()
    if not 1 <= nranks <= world.Get_size():
        raise ValueError(f"nranks must be between 1 and {world.Get_size()}; got {nranks}")
    color = 0 if world.Get_rank() < nranks else mpi.MPI().UNDEFINED
    sub = world.Split(color, world.Get_rank())
    if sub == mpi.MPI().COMM_NULL:
        return None
    try:
        comm = world if nranks == world.Get_size() else sub
        return run_lesson(lesson, comm, columns)
    finally:
        sub.Free()


__all__ = [
    "COLUMNS",
    "CURRENT_COLUMNS",
    "HISTORIC_COLUMNS",
    "c_library",
    "operation_table",
    "run_all",
    "run_lesson",
    "run_on_subcommunicator",
    "run_snippet",
    "unsupported_reason",
]
