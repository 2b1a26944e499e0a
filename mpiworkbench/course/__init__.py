"""The teaching notebooks as an nbgrader course, graded against a live MPI cluster.

``mpiworkbench course --nbgrader DIR`` (:func:`build`) writes an nbgrader course directory from
the same source the notebooks and the test suite use (the notebooks' answer and check cells,
and the solutions kept in :mod:`mpiworkbench.exercises`)::

    DIR/nbgrader_config.py                  the course's settings (see below)
    DIR/source/<notebook>/<notebook>.ipynb  one assignment per notebook with exercises

In each source notebook an exercise is two cells:

* the **answer cell** becomes an nbgrader *solution* cell: the learner's blank as the notebook
  has it, then the reference solution between ``### BEGIN SOLUTION`` and ``### END SOLUTION``.
  The course replaces solution regions by nothing (``ClearSolutions.code_stub``), so
  ``nbgrader generate_assignment`` releases exactly the blank learners have in the notebook;
* its **check cell** becomes a *graded*, locked test cell worth :data:`POINTS`. Under nbgrader
  a blank fails its check (:func:`mpiworkbench.exercises.check`), so an unanswered exercise
  scores nothing.

``nbgrader_config.py`` hands autograding to :func:`mpiworkbench.course.grading.configure`: every
submission is executed on one MPI cluster, made fresh before each (attached when the profile's
cluster runs, started otherwise), with a time limit on every MPI call (a deadlock ends in the
hang report, in the submission's feedback) and on every cell.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from mpiworkbench import exercises

__all__ = ["build", "source_notebook", "assignments", "POINTS", "COURSE_ID"]

#: nbgrader's course id for the course written here.
COURSE_ID = "mpiworkbench"
#: Points of each exercise (its check cell passes or fails as a whole).
POINTS = 1
#: nbgrader's cell metadata schema written here (nbgrader 0.9).
SCHEMA_VERSION = 3
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
#: The profile whose cluster the notebooks attach to (their first cell: ``Workbench(profile="mpi")``).
PROFILE = "mpi"
#: Defaults of the grading settings written into ``nbgrader_config.py``.
RANKS = 2
TIMEOUT_S = 60.0
CELL_TIMEOUT_S = 600

_CELL_MAGIC = re.compile(r"^%%\S+")


def assignments(notebooks: Path, only: list[str] | None = None) -> list[Path]:
    """The notebooks of *notebooks* that have exercises (each becomes an assignment), or those
    named in *only* (file stems, e.g. ``["00_start_here"]``); ``ValueError`` naming an unknown
    or exercise-less one."""
    import nbformat

    found = {}
    for path in sorted(Path(notebooks).glob("*.ipynb")):
        if exercises.answer_cells(nbformat.read(path, as_version=4)):
            found[path.stem] = path
    if not found:
        raise FileNotFoundError(f"no notebooks with exercises in {str(notebooks)!r}; pass --notebooks DIR "
                                "(the repository's notebooks/)")
    if not only:
        return list(found.values())
    unknown = [name for name in only if name not in found]
    if unknown:
        raise ValueError(f"no notebook with exercises named {', '.join(map(repr, unknown))}; "
                         f"choose from {', '.join(found)}")
    return [found[name] for name in only]


def _solution_cell(blank: str, solution: str, name: str) -> str:
    """The source of a solution cell: *blank* as learners get it, then *solution* in a solution
    region. A cell magic both start with (``%%px``) is kept once, at the top, where IPython
    needs it."""
    blank_lines, solution_lines = blank.rstrip("\n").split("\n"), solution.rstrip("\n").split("\n")
    magic = _CELL_MAGIC.match(solution_lines[0])
    if magic:
        if blank_lines[0].strip() != solution_lines[0].strip():
            raise ValueError(f"exercise {name!r}: the solution starts with {solution_lines[0]!r} but the "
                             f"notebook's answer cell with {blank_lines[0]!r}; make them the same cell magic")
        solution_lines = solution_lines[1:]
    return "\n".join([*blank_lines, BEGIN_SOLUTION, *solution_lines, END_SOLUTION])


def _nbgrader(grade_id: str, *, solution: bool, grade: bool, locked: bool, points: int | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA_VERSION,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def source_notebook(nb, notebook: str, points: int = POINTS):
    """Turn teaching notebook *nb* (named *notebook*, its file stem) into its nbgrader source
    version, in place: every answer cell a solution cell (blank + reference solution), its check
    (the first cell after it tagged ``check``) a graded and locked test cell of *points*.

    Raises ``ValueError`` naming an answer cell with no check cell, and ``KeyError``
    naming one without a reference solution.
    """
    known = exercises.solutions(notebook)
    answers = exercises.answer_cells(nb)
    for (index, name), following in zip(answers, [*answers[1:], (len(nb.cells), None)]):
        solution = known.get(name, {}).get("solution")
        if solution is None:
            raise KeyError(f"{notebook}: answer cell {index} ({name!r}) has no solution in "
                           f"{exercises.SOLUTIONS / (notebook + exercises.SUFFIX)}")
        # its check: the first cell tagged so before the next answer cell
        check = next((cell for cell in nb.cells[index + 1:following[0]]
                      if exercises.CHECK_TAG in cell.metadata.get("tags", [])), None)
        if check is None:
            raise ValueError(f"{notebook}: answer cell {index} ({name!r}) has no cell tagged "
                             f"{exercises.CHECK_TAG!r} after it (before the next answer cell) that checks "
                             "it; tag its check cell")
        answer = nb.cells[index]
        answer.source = _solution_cell(answer.source, solution, name)
        answer.metadata["nbgrader"] = _nbgrader(name, solution=True, grade=False, locked=False)
        check.metadata["nbgrader"] = _nbgrader(f"{name}-check", solution=False, grade=True, locked=True,
                                               points=points)
    return nb


def config_text(ranks: int = RANKS, timeout: float = TIMEOUT_S, cell_timeout: int = CELL_TIMEOUT_S) -> str:
    """The course's ``nbgrader_config.py``."""
    return f'''"""nbgrader settings of the course `mpiworkbench course --nbgrader` wrote.

Run nbgrader's commands in this directory:
    nbgrader generate_assignment 00_start_here   # release/: the learners' version
    nbgrader autograde 00_start_here             # grades submitted/<student>/00_start_here/
    nbgrader generate_feedback 00_start_here     # feedback/: with each failing cell's output
Autograding runs every submission on one MPI cluster of {ranks} rank(s) of the profile
{PROFILE!r}: the running one (ipcluster start -n {ranks} --profile={PROFILE}), or one of its own,
made fresh before each submission. An MPI call that takes longer than {timeout:g} s is reported
as hung (which rank, which call, which line) and fails its exercise; a cell may take
{cell_timeout} s. Change them here (mpiworkbench.course.grading.configure).
"""

from mpiworkbench.course.grading import configure

c = get_config()  # noqa: F821 (given by nbgrader)
c.CourseDirectory.course_id = {COURSE_ID!r}
# solution regions are removed, leaving the blank the notebook shows learners
c.ClearSolutions.code_stub = {{"python": ""}}
configure(c, profile={PROFILE!r}, ranks={ranks}, timeout={timeout!r}, cell_timeout={cell_timeout})
'''


def build(course: str | Path, notebooks: str | Path = "notebooks", only: list[str] | None = None,
          ranks: int = RANKS, timeout: float = TIMEOUT_S, cell_timeout: int = CELL_TIMEOUT_S,
          points: int = POINTS) -> list[str]:
    """Write the nbgrader course directory *course* from the teaching notebooks in *notebooks*
    (all with exercises, or those named in *only*); return the assignments written.

    *ranks*, *timeout* (seconds an MPI call may take when graded) and *cell_timeout* (seconds a
    cell may take) go into ``nbgrader_config.py``. An existing course directory is updated:
    its ``source/<assignment>`` folders are rewritten, everything else (submissions, the
    gradebook) is kept.
    """
    import nbformat

    if ranks < 1:
        raise ValueError(f"ranks={ranks}: a course is graded on at least 1 rank")
    if not timeout > 0 or not cell_timeout > 0:
        raise ValueError(f"timeout={timeout}, cell_timeout={cell_timeout}: both must be positive seconds")
    if cell_timeout <= timeout:
        raise ValueError(f"cell_timeout={cell_timeout} must exceed timeout={timeout}: an MPI call that hangs "
                         "must be reported (with the hang report) before nbgrader interrupts the cell")
    paths = assignments(Path(notebooks), only)
    course = Path(course)
    written = []
    for path in paths:
        nb = source_notebook(nbformat.read(path, as_version=4), path.stem, points)
        target = course / "source" / path.stem
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        nbformat.write(nb, target / path.name)
        written.append(path.stem)
    (course / "nbgrader_config.py").write_text(config_text(ranks, timeout, cell_timeout))
    return written
