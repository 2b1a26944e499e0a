"""The side-by-side syntax lessons: one scenario per MPI routine, one snippet file per column.

Each lesson is a tiny program every column implements the same way (same data, same
root), so every rank's result can be checked against :func:`expected`. The snippet files
live in ``snippets/<lesson>/<column file>``: the code a table shows is the file that runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpiworkbench.backends import historic_names, implemented_names

SNIPPETS = Path(__file__).with_name("snippets")

#: Column order of every table: C first (as the thesis does), the backends implemented
#: here, then the five historic modules (emulated) — both from the backends registry.
CURRENT_COLUMNS: tuple[str, ...] = tuple(implemented_names())
HISTORIC_COLUMNS: tuple[str, ...] = tuple(historic_names())
COLUMNS: tuple[str, ...] = CURRENT_COLUMNS + HISTORIC_COLUMNS

#: Column → snippet file name inside a lesson folder.
FILES: dict[str, str] = {
    "c": "c.c",
    "mpi4py-obj": "mpi4py_obj.py",
    "mpi4py-buf": "mpi4py_buf.py",
    "numba-mpi": "numba_mpi.py",
    "mpi4jax": "mpi4jax.py",
    "pypar": "pypar.py",
    "pyMPI": "pympi.py",
    "Scientific.MPI": "scientific_mpi.py",
    "MYMPI": "mympi.py",
    "boostmpi": "boostmpi.py",
}


@dataclass(frozen=True)
class Lesson:
    name: str
    title: str
    operations: tuple[str, ...]  #: the Table 4.1 operations it demonstrates
    table: str  #: the thesis table with the documented syntax
    scenario: str
    min_ranks: int = 1


LESSONS: dict[str, Lesson] = {
    lesson.name: lesson
    for lesson in (
        Lesson("hello", "Hello world", (), "§3.1–3.6", "every rank reports its rank and the size"),
        Lesson("send_recv", "Blocking send and receive", ("send", "recv"), "Table 4.2",
               "rank 0 sends [1, 2, 3, 4] to rank 1 with tag 11", min_ranks=2),
        Lesson("sendrecv", "Sendrecv and MPI_PROC_NULL", ("sendrecv",), "Table 4.3",
               "every rank sends [rank]*3 to rank+1 and receives from rank-1; the ends talk to "
               "MPI_PROC_NULL, so rank 0's ghost stays [-1, -1, -1]"),
        Lesson("isend_irecv", "Non-blocking send and receive", ("isend", "irecv"), "Table 4.4",
               "a periodic ring: send [rank]*3 right, receive from the left, wait for both"),
        Lesson("bcast", "Broadcast", ("bcast",), "Table 4.5", "rank 0's [0, 10, 20, 30] reaches every rank"),
        Lesson("reduce", "Reduce", ("reduce",), "Table 4.6",
               "the sum of [rank+1, 2(rank+1)] over all ranks, on rank 0"),
        Lesson("allreduce", "Allreduce", ("allreduce",), "Table 4.7",
               "the sum of [rank+1, 2(rank+1)] over all ranks, on every rank (CG's dot product)"),
        Lesson("gather", "Gather", ("gather",), "Table 4.8", "[r, r²] of every rank r, in rank order, on rank 0"),
        Lesson("allgather", "Allgather", ("allgather",), "Table 4.9", "[r, r²] of every rank r, on every rank"),
        Lesson("scatter", "Scatter", ("scatter",), "Table 4.10",
               "rank 0 holds [0, 1, …, 2·size-1]; rank r gets [2r, 2r+1]"),
        Lesson("alltoall", "All-to-all", ("alltoall",), "Table 4.11",
               "block j of rank r is 100r + j and goes to rank j: rank r receives [100j + r for j]"),
    )
}

#: Operation → the lesson that demonstrates it.
OPERATION_LESSON: dict[str, str] = {op: lesson.name for lesson in LESSONS.values() for op in lesson.operations}


def snippet_path(lesson: str, column: str) -> Path:
    """Where the (lesson, column) snippet lives (it may not exist: the column lacks the call)."""
    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose one of {list(LESSONS)}")
    if column not in FILES:
        raise ValueError(f"unknown column {column!r}; choose one of {list(COLUMNS)}")
    return SNIPPETS / lesson / FILES[column]


def has_snippet(lesson: str, column: str) -> bool:
    return snippet_path(lesson, column).exists()


def snippet_source(lesson: str, column: str) -> str:
    """The text of the snippet file, exactly as it runs."""
    return snippet_path(lesson, column).read_text()


def expected(lesson: str, rank: int, size: int) -> np.ndarray | None:
    """What *rank* must end up with in *lesson* on *size* ranks (``None``: nothing)."""
    total = size * (size + 1) / 2
    if lesson == "hello":
        return np.array([rank, size], float)
    if lesson == "send_recv":
        return np.array([1.0, 2.0, 3.0, 4.0]) if rank == 1 else None
    if lesson == "sendrecv":
        return np.full(3, -1.0 if rank == 0 else rank - 1.0)
    if lesson == "isend_irecv":
        return np.full(3, float((rank - 1) % size))
    if lesson == "bcast":
        return np.array([0.0, 10.0, 20.0, 30.0])
    if lesson == "reduce":
        return np.array([total, 2 * total]) if rank == 0 else None
    if lesson == "allreduce":
        return np.array([total, 2 * total])
    if lesson in ("gather", "allgather"):
        table = np.array([[r, r * r] for r in range(size)], float).ravel()
        return table if (rank == 0 or lesson == "allgather") else None
    if lesson == "scatter":
        return np.array([2.0 * rank, 2.0 * rank + 1])
    if lesson == "alltoall":
        return np.array([100.0 * j + rank for j in range(size)])
    raise ValueError(f"unknown lesson {lesson!r}")


def normalise(result) -> np.ndarray | None:
    """A snippet's result as a flat float array (lists, tuples, arrays), or ``None``."""
    if result is None:
        return None
    return np.asarray(result, dtype=float).ravel()


def matches(lesson: str, rank: int, size: int, result) -> bool:
    want, got = expected(lesson, rank, size), normalise(result)
    if want is None or got is None:
        return want is None and got is None
    return want.shape == got.shape and bool(np.allclose(want, got))
