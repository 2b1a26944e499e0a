"""Shared test settings: keep every test away from the user's IPython and cache dirs."""

from __future__ import annotations

import atexit
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import uuid

import pytest

from tests.costs import pytest_collection_modifyitems  # noqa: F401 - a hook: what a test costs

# pytest keeps each test module's rewritten byte-code beside it (``__pycache__``, which git ignores),
# but not where PYTHONDONTWRITEBYTECODE is set (this machine sets it for everything): then every
# pytest process (each worker, each rank of the MPI tier) rewrote and compiled every test module it
# collected, again (the unit tier's collection: 12.4 CPU-s a process, 8.6 with the byte-code kept).
sys.dont_write_bytecode = False

# Every process this test run starts inherits the marker, so leftovers (even orphans
# re-parented to init) can be found machine-wide: tests/process_tree.py.
os.environ.setdefault("MPIWORKBENCH_TEST_RUN", uuid.uuid4().hex)

# Tests must not write into the user's ~/.ipython (cluster files, profiles); the C build
# cache is shared between runs on purpose (compiling is slow, results are hash-keyed).
# Child processes (kernels, engines, MPI ranks) inherit the directory; its creator removes it.
if "MPIWORKBENCH_TEST_IPYTHONDIR" not in os.environ:
    _IPYTHONDIR = tempfile.mkdtemp(prefix="mpiwb-test-ipython-")
    os.environ["MPIWORKBENCH_TEST_IPYTHONDIR"] = os.environ["IPYTHONDIR"] = _IPYTHONDIR
    atexit.register(shutil.rmtree, _IPYTHONDIR, ignore_errors=True)

# A pytest-xdist worker (tests/timetable.py runs tiers on two) gets an IPython directory of its own
# below the run's (a cluster of one worker's profile is never the other's to attach to), and a
# marker of its own beside the run's: a test's check for what it left running looks at its
# worker's processes (tests/process_tree.py), the tier's last checks at the whole run's.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _WORKER = os.environ["PYTEST_XDIST_WORKER"]
    os.environ["IPYTHONDIR"] = os.path.join(os.environ["MPIWORKBENCH_TEST_IPYTHONDIR"], f"worker-{_WORKER}")
    os.makedirs(os.environ["IPYTHONDIR"], exist_ok=True)
    os.environ["MPIWORKBENCH_TEST_WORKER"] = f"{os.environ['MPIWORKBENCH_TEST_RUN']}-{_WORKER}"
# ipyparallel: no progress bars or streaming widgets in non-interactive runs.
os.environ.setdefault("IPP_NONINTERACTIVE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


# -- no test writes into the working tree -------------------------------------------------
# At session start the checkout's `git status` is recorded (with each listed path's mtime and
# size, so rewriting an already-modified file counts too); at session end any path listed that
# is new or changed fails the session. Several tiers in a row are independent sessions; under mpiexec
# only rank 0 checks. Paths git ignores (.venv/, caches) never show up.
# Editing files yourself while tests run trips it too: MPIWORKBENCH_TREE_CHECK=0 turns it off.
_TREE_IGNORED = (".venv/",)
_TREE_BEFORE: dict[str, tuple] | None = None
_TREE_ROOT: str | None = None


def _launcher_value(what: str) -> int | None:
    """This process's MPI ``RANK`` or ``SIZE`` as its launcher set it (MPICH/Intel, Open MPI, PMIx)."""
    for var in (f"PMI_{what}", f"OMPI_COMM_WORLD_{what}", f"PMIX_{what}"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return None


def _mpi_rank() -> int:
    return _launcher_value("RANK") or 0


def _tree_state(root: str) -> dict[str, tuple] | None:
    """``path -> (status, mtime_ns, size)`` for every path ``git status`` lists; None without git."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", root, "status", "--porcelain=v1", "-z", "--untracked-files=all"],
            capture_output=True, timeout=120, check=True).stdout.decode(errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    entries = iter(out.split("\0"))
    state = {}
    for entry in entries:
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":  # a rename or copy is followed by its source path
            next(entries, None)
        if path.startswith(_TREE_IGNORED):
            continue
        try:
            st = os.lstat(os.path.join(root, path))
            state[path] = (status, st.st_mtime_ns, st.st_size)
        except OSError:
            state[path] = (status, None, None)
    return state


# -- nothing left in /dev/shm ----------------------------------------------------------------
# The MPI worlds' files in /dev/shm when the session starts: the tiers' last tests
# (test_zz_no_leftovers.py) check that no new one outlives the processes that made it.
_SHM_AT_START: set[str] = set()


@pytest.fixture(scope="session")
def shm_at_start() -> frozenset[str]:
    """The MPI worlds' files in ``/dev/shm`` when this test session started."""
    return frozenset(_SHM_AT_START)


def pytest_sessionstart(session):
    global _TREE_BEFORE, _TREE_ROOT, _cpu_mark
    _cpu_mark = _cpu_seconds()
    from tests.process_tree import world_files

    from tests.timetable import SHM_AT_START_VAR

    baseline = os.environ.get(SHM_AT_START_VAR)
    if baseline:  # a tier run in several sessions (tests.timetable tier): one baseline for all
        with open(baseline) as f:
            _SHM_AT_START.update(json.load(f))
    else:
        _SHM_AT_START.update(world_files())
    if os.environ.get("MPIWORKBENCH_TREE_CHECK", "1") == "0" or _mpi_rank() != 0:
        return
    import subprocess

    try:
        found = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse",
                                "--show-toplevel"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return
    if found.returncode == 0:  # inside a git checkout
        _TREE_ROOT = found.stdout.strip()
        _TREE_BEFORE = _tree_state(_TREE_ROOT)


def pytest_sessionfinish(session, exitstatus):
    _write_times(session)
    if _TREE_BEFORE is None or _TREE_ROOT is None:
        return
    after = _tree_state(_TREE_ROOT)
    if after is None:
        return
    # a path that left the list became clean (committed, say): nothing a test writes does that
    changed = sorted(p for p in after if after[p] != _TREE_BEFORE.get(p))
    if not changed:
        return
    lines = [f"  {after[p][0]} {p}" for p in changed]
    message = ("the test run changed the working tree (tests must write only into tmp_path or "
               "temporary directories); new or changed since the session started:\n" + "\n".join(lines)
               + "\n(edits made by hand while the tests ran show up here too; "
               "MPIWORKBENCH_TREE_CHECK=0 turns this check off)")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write("\n")
        reporter.write_sep("=", "tests wrote into the working tree", red=True, bold=True)
        reporter.write_line(message)
    else:
        print(message, file=sys.stderr)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- the time table (tests/timetable.py) -------------------------------------------------------
# Each test's set-up, call and tear-down added up, and its outcome; written at the session's end
# when the session runs as a tier of `make test` (tests.timetable run sets the tier's name). Under
# pytest-xdist the controller writes (the workers' reports reach it), under mpiexec rank 0.
_TEST_SECONDS: dict[str, float] = {}
_TEST_OUTCOMES: dict[str, str] = {}
#: A test's CPU seconds: its process's, and its child processes' once they ended and were waited for
#: (a world's controller, mpiexec and ranks, a kernel, JupyterLab, Chromium: what the test started
#: and stopped). A lower bound: a process the test left to another parent is not counted, and a
#: module's or session's shared fixture is counted where it is set up and torn down.
_TEST_CPU: dict[str, float] = {}
#: The process's CPU seconds when the last test phase ended (or the session started).
_cpu_mark = 0.0
#: A failed test's reason (the head and tail of the message pytest prints), shown by the time table: a run
#: whose log only keeps its tail (CI) still says which test failed and why.
_TEST_FAILURES: dict[str, str] = {}


#: Lines of a failure's message the time table keeps: its first ones, and the last ones (where a
#: client's stderr ends with the exception that made it fail).
CRASH_HEAD, CRASH_TAIL = 3, 25
#: And of the lines between, at most this many that name an error (the last ones).
CRASH_MIDDLE = 12
_TELLING = re.compile(r"Error|Exception|Traceback|Timeout|[Ff]ailed|refused|Killed|exited")


def _crash_line(report) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr or "")
    lines = [line[:300] for line in text.strip().splitlines()]
    if len(lines) > CRASH_HEAD + CRASH_TAIL:
        middle = lines[CRASH_HEAD:-CRASH_TAIL]
        telling = [line for line in middle if _TELLING.search(line)][-CRASH_MIDDLE:]
        lines = (lines[:CRASH_HEAD] + [f"[… {len(middle)} lines; of them, those naming an error:]"]
                 + [f"  | {line}" for line in telling] + ["[…]"] + lines[-CRASH_TAIL:])
    return f"{report.when}: " + "\n".join(lines)


def _cpu_seconds() -> float:
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Each phase's report carries the CPU seconds spent since the last phase ended (``cpu_s``;
    the first test's set-up counts from the session's start): the reports reach pytest-xdist's
    controller, which writes the time table."""
    global _cpu_mark
    outcome = yield
    now = _cpu_seconds()
    outcome.get_result().user_properties.append(("cpu_s", now - _cpu_mark))
    _cpu_mark = now


def pytest_runtest_logreport(report):
    _TEST_SECONDS[report.nodeid] = _TEST_SECONDS.get(report.nodeid, 0.0) + report.duration
    cpu = dict(report.user_properties).get("cpu_s")
    if cpu is not None:
        _TEST_CPU[report.nodeid] = _TEST_CPU.get(report.nodeid, 0.0) + cpu
    if report.failed:
        _TEST_OUTCOMES[report.nodeid] = "failed"
        _TEST_FAILURES.setdefault(report.nodeid, _crash_line(report))
    elif report.skipped and _TEST_OUTCOMES.get(report.nodeid) != "failed":
        _TEST_OUTCOMES[report.nodeid] = "skipped"
    elif report.when == "call" and report.nodeid not in _TEST_OUTCOMES:
        _TEST_OUTCOMES[report.nodeid] = "passed"


def _session_label() -> str:
    """Which run of its tier a session is, when a tier runs several (the MPI tier: ranks, library)."""
    size = _launcher_value("SIZE")
    return f"{size} rank(s), {os.environ.get('MPIWORKBENCH_MPI') or 'mpich'}" if size else ""


def _write_times(session) -> None:
    from tests import timetable

    tier = os.environ.get(timetable.TIER_VAR)
    if not tier or _mpi_rank() != 0:
        return
    from tests.costs import DECLARED_COSTS, FULL_ONLY

    if DECLARED_COSTS or FULL_ONLY:  # where the tests were collected: a worker, or the only process
        timetable.record_costs(tier, {nodeid: list(cost) for nodeid, cost in DECLARED_COSTS.items()}, FULL_ONLY)
    if not hasattr(session.config, "workerinput"):
        timetable.record_session(tier, _session_label(), _TEST_SECONDS, _TEST_OUTCOMES, _TEST_FAILURES, _TEST_CPU)
