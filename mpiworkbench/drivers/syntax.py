"""The side-by-side syntax lessons, run on the engines of a session."""

from __future__ import annotations

from typing import Any

from mpiworkbench.syntax.execution import run_on_subcommunicator
from mpiworkbench.syntax.lessons import COLUMNS, LESSONS


def run_lesson_on(wb, lesson: str, nranks: int | None = None, columns=None) -> dict[str, dict[str, Any]]:
    """Run *lesson* in every column on the engines (on the first *nranks* ranks).

    Parameters
    ----------
    wb
        A running session.
    lesson : str
        A key of :data:`mpiworkbench.syntax.lessons.LESSONS`.
    nranks : int, optional
        How many ranks take part (a sub-communicator); all by default.
    columns : list of str, optional
        The backends to run (:data:`~mpiworkbench.syntax.lessons.COLUMNS` by default).

    Returns
    -------
    dict
        Rank 0's ``{column: report}`` (status, outputs, results, reason or error).

    Raises
    ------
    ValueError
        For an unknown lesson or a rank count the cluster does not have.
    """
    if lesson not in LESSONS:
        raise ValueError(f"unknown lesson {lesson!r}; choose one of {list(LESSONS)}")
    nranks = wb.n if nranks is None else nranks
    if not 1 <= nranks <= wb.n:
        raise ValueError(f"nranks must be between 1 and the cluster's {wb.n} engines; got {nranks}")
    return wb.run(run_on_subcommunicator, lesson, nranks, list(columns or COLUMNS))[0]
