"""Exercises in the teaching notebooks: a blank for the learner, a check that can fail, a hint.

One convention, read by the notebooks, the test suite and ``mpiworkbench exercises``:

* An **answer cell** carries the tag ``exercise`` and the metadata ``"exercise": NAME``. In the
  notebook it holds a clearly marked blank — ``...`` (Python's ``Ellipsis``) where the answer
  goes, with ``# YOUR ANSWER`` beside it.
* A **check cell** calls :func:`check` with the same NAME: it says *right*, or raises
  :class:`WrongAnswer` with a hint; while the blank is still there it only says so (the notebook
  runs through, so a learner can work at their own pace).
* The **reference solution** (and a deliberately **wrong answer**, used by the test suite to
  prove the check can fail) live outside the notebook, in ``solutions/<notebook>.py`` of this
  package, in Jupytext's percent format: one ``# %% NAME`` section per answer cell,
  ``# %% NAME wrong`` for the wrong one, IPython magics commented out (``# %%px --no-stream``)
  so that the files are valid Python for every tool.

:func:`inject` puts solutions (or wrong answers) into a notebook's answer cells; the teachers'
version of every notebook is ``mpiworkbench exercises --solutions DIR``, and the same solutions
and checks make the graded course (``mpiworkbench course --nbgrader DIR``,
:mod:`mpiworkbench.course`). Under nbgrader (``$NBGRADER_EXECUTION`` set, as ``nbgrader
autograde`` and ``nbgrader validate`` do) a blank fails its check, so an unanswered exercise
scores nothing; in the notebook it only says "not answered yet".
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

SOLUTIONS = Path(__file__).with_name("solutions")
#: Solutions files are Python files in Jupytext's percent format.
SUFFIX = ".py"
TAG = "exercise"
#: The tag of the cell after an answer cell that checks it.
CHECK_TAG = "check"
_SECTION = re.compile(r"^# %% (?P<name>\S+)(?P<wrong> wrong)?\s*$", re.MULTILINE)
#: A commented IPython magic in a solutions file (Jupytext's escaping): ``# %%px --no-stream``.
_MAGIC = re.compile(r"^# (?=%%?[A-Za-z_])", re.MULTILINE)

#: Set by nbgrader while it executes a notebook to grade or validate it.
GRADING_VARIABLE = "NBGRADER_EXECUTION"

__all__ = ["WrongAnswer", "check", "blank", "solutions", "inject", "answer_cells", "SOLUTIONS"]


class WrongAnswer(AssertionError):
    """An exercise's check failed; the message names the exercise and gives its hint."""


def _stub():
    ...


def blank(value: Any) -> bool:
    """Whether *value* still holds the notebook's blank: ``...``, also inside a container, or
    a function whose whole body is ``...`` (the blank of a "write this function" exercise)."""
    if value is Ellipsis:
        return True
    code = getattr(value, "__code__", None)
    if code is not None and code.co_code == _stub.__code__.co_code and code.co_consts == _stub.__code__.co_consts:
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(blank(v) for v in value)
    if isinstance(value, dict):
        return any(blank(v) for v in value.values())
    return bool(getattr(value, "__exercise_blank__", False))


def check(name: str, answer: Any, test: Callable[[Any], object], hint: str,
          right: str | Callable[[Any], str] = "") -> bool | None:
    """Check the learner's *answer* to exercise *name* with *test* (true when right).

    Returns ``True`` and prints a short confirmation when right, followed by *right* (or, when
    it is a function, what it says of the answer: called only then, so it may use the answer).
    While the answer is still the blank, prints what to do and returns ``False`` (under
    nbgrader, ``$NBGRADER_EXECUTION`` set, raises :class:`WrongAnswer` instead, and returns
    ``None`` when right: nbgrader would read a value as a partial score). Otherwise
    raises :class:`WrongAnswer` with *hint* (and the error *test* raised, if it raised one).
    """
    if blank(answer):
        if os.environ.get(GRADING_VARIABLE):
            raise WrongAnswer(f"Exercise {name}: not answered (the answer cell still holds its blank, ...).")
        print(f"Exercise {name}: not answered yet. Replace the ... in the answer cell above, then run this cell again.")
        return False
    try:
        ok = bool(test(answer))
        problem = ""
    except Exception as exc:  # noqa: BLE001 - a wrong answer may fail in any way; say how
        ok, problem = False, f" (checking it raised {type(exc).__name__}: {exc})"
    if not ok:
        raise WrongAnswer(f"Exercise {name}: not right yet{problem}. Hint: {hint}")
    said = right(answer) if callable(right) else right
    print(f"Exercise {name}: right." + (f" {said}" if said else ""))
    # nbgrader reads the value a graded cell ends with as a partial score: give it none
    return None if os.environ.get(GRADING_VARIABLE) else True


def solutions(notebook: str) -> dict[str, dict[str, str]]:
    """``{NAME: {"solution": code, "wrong": code}}`` for the notebook named *notebook*
    (its file stem, e.g. ``"02_microbenchmarks"``); empty when it has no exercises."""
    path = SOLUTIONS / f"{notebook}{SUFFIX}"
    if not path.exists():
        return {}
    text = path.read_text()
    found: dict[str, dict[str, str]] = {}
    marks = list(_SECTION.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None]):
        body = _MAGIC.sub("", text[mark.end():following.start() if following else len(text)]).strip("\n")
        kind = "wrong" if mark.group("wrong") else "solution"
        found.setdefault(mark.group("name"), {})[kind] = body + "\n"
    return found


def answer_cells(nb) -> list[tuple[int, str]]:
    """``(index, NAME)`` of every answer cell of notebook *nb* (an nbformat node)."""
    return [(i, cell.metadata["exercise"]) for i, cell in enumerate(nb.cells)
            if cell.cell_type == "code" and TAG in cell.metadata.get("tags", [])]


def inject(nb, notebook: str, kind: str = "solution"):
    """Replace the blanks of notebook *nb* (named *notebook*) by its reference solutions
    (``kind="solution"``) or by the deliberately wrong answers (``kind="wrong"``), in place.

    Raises ``KeyError`` naming an answer cell that has no such code in ``solutions/``.
    """
    if kind not in ("solution", "wrong"):
        raise ValueError(f"kind must be 'solution' or 'wrong'; got {kind!r}")
    known = solutions(notebook)
    for index, name in answer_cells(nb):
        code = known.get(name, {}).get(kind)
        if code is None:
            raise KeyError(f"{notebook}: answer cell {index} ({name!r}) has no {kind} in "
                           f"{SOLUTIONS / (notebook + SUFFIX)}; add a '# %% {name}"
                           f"{' wrong' if kind == 'wrong' else ''}' section")
        nb.cells[index].source = code.rstrip("\n")
    return nb
