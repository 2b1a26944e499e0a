"""A class graded on a live MPI cluster: ``mpiworkbench course --nbgrader``, then nbgrader's own
``generate_assignment``, ``autograde`` and ``generate_feedback`` on four submissions of
notebook 00 — one that deadlocks in the exercise, then a right and a wrong one (a blank answer's
"not answered yet" is checked for every notebook by ``test_notebooks.py``). The grader
starts its own cluster (no ``mpi`` cluster runs in this IPython directory), makes the world
fresh before each submission, and stops it at the end; on a cluster a teacher started with
``ipcluster`` it attaches and makes the world fresh too, so a deadlock left by one grading run
costs the next submission nothing (the suite's full form: ``tests/costs.py``). The source version
passes ``nbgrader validate``."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from mpiworkbench import exercises
from mpiworkbench.cli import main
from mpiworkbench.client.cluster.profiles import create_profile
from tests.cluster.slurm import processes_with_env, wait_until
from tests.costs import FULL, fast_or_full
from tests.ipcluster import LIMIT, IPCluster
from tests.unit.test_course import NOTEBOOKS, nbgrader

pytestmark = pytest.mark.cost(fast_or_full(180, 300), (
                         "notebook 00 as an nbgrader course autograded by nbgrader's own commands, three "
                         "submissions (one deadlocks until its timeout) on a cluster the grader starts (and, in "
                         "the full form, again on a running ipcluster)"))

ASSIGNMENT = "00_start_here"
#: Seconds an MPI call may take when graded; a deadlock ends after this.
TIMEOUT_S = 20
#: Every rank receives first, from its neighbour, and nobody sends: a deadlock at any rank count.
DEADLOCK = """%%px --no-stream
import os
comm = MPI.COMM_WORLD
other = (comm.rank + 1) % comm.size
got = comm.recv(source=other)
total = comm.allreduce(comm.rank)
pids = comm.gather(os.getpid(), root=0)"""
#: Graded in this order (nbgrader sorts them): the right answer comes after the deadlock.
STUDENTS = {"a_stuck": "deadlock", "b_right": "solution", "c_wrong": "wrong"}


def submit(course: Path, student: str, kind: str) -> None:
    release = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = nbformat.read(release, as_version=4)
    if kind in ("solution", "wrong"):
        exercises.inject(nb, ASSIGNMENT, kind)
    elif kind == "deadlock":
        for index, _ in exercises.answer_cells(nb):
            nb.cells[index].source = DEADLOCK
    target = course / "submitted" / student / ASSIGNMENT
    target.mkdir(parents=True)
    nbformat.write(nb, target / release.name)


@pytest.fixture(scope="module")
def teachers_cluster(tmp_path_factory):
    """A teacher's ``ipcluster start -n 2 --profile=mpi`` in an IPython directory of its own:
    ``(ipcluster, ipython_dir)``. Started before the grading below, so that ipcluster's first
    30 s (IPClusterStart.early_shutdown: it tears its cluster down when the engines stop within
    them, and the grader restarts them) pass while that grading runs."""
    root = tmp_path_factory.mktemp("teacher")
    ipython_dir = root / "ipython"
    create_profile("mpi", launcher="mpi", ipython_dir_=ipython_dir)
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir), "MPIWORKBENCH_SMALL": "1"}
    ipcluster = IPCluster("mpi", ipython_dir, root, env)
    try:
        ipcluster.start(2).close()
        yield ipcluster, ipython_dir
    finally:
        ipcluster.stop()


@pytest.fixture(scope="module")
def graded(request, tmp_path_factory):
    """The course after autograding and feedback, with a fresh IPython directory: the grader
    must start (and stop) its own cluster (in the suite's full form the teacher's, already running
    for the grading on it, is in another IPython directory and is not touched)."""
    if FULL:
        request.getfixturevalue("teachers_cluster")
    root = tmp_path_factory.mktemp("class")
    course = root / "course"
    env = pytest.MonkeyPatch()
    env.setenv("IPYTHONDIR", str(root / "ipython"))
    env.setenv("MPIWORKBENCH_SMALL", "1")
    try:
        assert main(["course", "--nbgrader", str(course), "--notebooks", str(NOTEBOOKS), "--only", ASSIGNMENT,
                     "--ranks", "2", "--timeout", str(TIMEOUT_S), "--cell-timeout", "300"]) == 0
        done = nbgrader(course, "generate_assignment", ASSIGNMENT)
        assert done.returncode == 0, done.stderr
        for student, kind in STUDENTS.items():
            submit(course, student, kind)
        autograde = nbgrader(course, "autograde", ASSIGNMENT)
        assert autograde.returncode == 0, _what_failed(autograde.stdout + autograde.stderr)
        feedback = nbgrader(course, "generate_feedback", ASSIGNMENT)
        assert feedback.returncode == 0, feedback.stderr[-3000:]
        yield course, autograde.stdout + autograde.stderr
    finally:
        env.undo()


def _what_failed(output: str) -> str:
    """nbgrader's tracebacks (what its last lines only point at: "see the above traceback"),
    else its last lines."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if "Traceback" in line or "[AutogradeApp | ERROR]" in line]
    if not starts:
        return output[-3000:]
    return "\n".join(lines[max(0, starts[0] - 5):starts[0] + 80])[-6000:]


def scores(course: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {s.student.id: s.score for s in gradebook.assignment_submissions(ASSIGNMENT)}


def graded_cell(course: Path, student: str, grade_id: str):
    nb = nbformat.read(course / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def errors(cell) -> list[tuple[str, str]]:
    return [(o.get("ename"), o.get("evalue", "")) for o in cell.get("outputs", []) if o.get("output_type") == "error"]


def test_right_wrong_and_deadlocked_submissions_get_the_grades_they_should(graded):
    course, _ = graded
    assert scores(course) == {"a_stuck": 0.0, "b_right": 1.0, "c_wrong": 0.0}


def test_the_wrong_answer_fails_its_check_with_what_is_wrong(graded):
    course, _ = graded
    (name, wrong), = errors(graded_cell(course, "c_wrong", "00-allreduce-gather-check"))
    assert name == "WrongAnswer" and "Hint: " in wrong


def test_the_deadlock_ends_in_the_hang_report_and_its_feedback_shows_it(graded):
    course, _ = graded
    (name, report), = errors(graded_cell(course, "a_stuck", "00-allreduce-gather"))
    assert name == "ExecutionTimeout"
    # which rank, which call, which line: every rank waits in a receive from its neighbour
    assert "Where each rank is:" in report
    for rank, source in ((0, 1), (1, 0)):
        assert f"rank {rank}: blocked in MPI_" in report and f"source={source}" in report
    assert ".py:4 in <module>" in report
    # the check after it is refused at once, not after another timeout behind the hung cell
    (name, refused), = errors(graded_cell(course, "a_stuck", "00-allreduce-gather-check"))
    assert name == "WorldBlocked" and "outlived its timeout" in refused
    html = (course / "feedback" / "a_stuck" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "Where each rank is:" in html and "blocked in MPI_" in html


def test_the_grader_restarted_the_world_for_each_student_and_left_nothing_running(graded, tmp_path):
    course, log = graded
    # the right answer graded after the deadlock ran on a fresh world: it scored
    assert scores(course)["b_right"] == 1.0
    right = graded_cell(course, "b_right", "00-allreduce-gather-check")
    assert errors(right) == [] and "right." in "".join(o.get("text", "") for o in right.outputs)
    assert "Exception while loading config file" not in log
    ipython_dir = course.parent / "ipython"
    assert processes_with_env(f"IPYTHONDIR={ipython_dir}") == []
    assert not (ipython_dir / "profile_mpi" / "security" / "cluster-.json").exists()


def test_the_source_passes_nbgrader_validate(graded, monkeypatch):
    course, _ = graded
    monkeypatch.setenv("IPYTHONDIR", str(course.parent / "ipython"))
    monkeypatch.setenv("MPIWORKBENCH_SMALL", "1")
    done = nbgrader(course, "validate", str(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"))
    assert done.returncode == 0 and "Success! Your notebook passes all the tests." in done.stdout, \
        done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.full("the grading again on a cluster a teacher started with ipcluster: the fast form proves its parts "
                  "(a deadlock graded, then a right answer on a fresh world, by the grader's own cluster here; "
                  "attaching to and restarting an ipcluster's engines in tests/cluster/test_attach.py and "
                  "test_notebooks_multinode.py)")
def test_on_a_running_cluster_a_deadlock_left_behind_costs_the_next_submission_nothing(graded, teachers_cluster):
    """Two grading runs on one ``ipcluster`` cluster: the first leaves its world blocked by the
    deadlock; the second attaches, makes the world fresh, and grades the right answer right."""
    course, _ = graded
    ipcluster, ipython_dir = teachers_cluster
    # ipcluster tears its cluster down when its engines stop within 30 s of starting
    # (IPClusterStart.early_shutdown), and the grader restarts them: wait that out
    wait_until(lambda: "Engines appear to have started successfully" in ipcluster.log.read_text(),
               "ipcluster to consider its engines started", LIMIT)
    saved = {name: os.environ.get(name) for name in ("IPYTHONDIR", "MPIWORKBENCH_SMALL")}
    os.environ.update(IPYTHONDIR=str(ipython_dir), MPIWORKBENCH_SMALL="1")
    try:
        for student in ("a_stuck", "b_right"):
            done = nbgrader(course, "autograde", ASSIGNMENT, "--student", student, "--force")
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    finally:
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    assert errors(graded_cell(course, "a_stuck", "00-allreduce-gather"))[0][0] == "ExecutionTimeout"
    right = graded_cell(course, "b_right", "00-allreduce-gather-check")
    assert errors(right) == [] and "right." in "".join(o.get("text", "") for o in right.outputs)
    assert scores(course)["b_right"] == 1.0
    # the teacher's cluster is still there (the grader only detached)
    assert (ipython_dir / "profile_mpi" / "security" / "cluster-.json").exists()
