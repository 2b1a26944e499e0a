"""What each run of the suite spent, and on what: the time table ``make test`` ends with.

``make test`` runs every tier through this module and prints the table at the end::

    python -m tests.timetable begin                  # a new table (forgets the previous run's)
    python -m tests.timetable run TIER -- CMD ...    # CMD's wall time, as TIER's (repeatable)
    python -m tests.timetable tier TIER [--workers N] -- PYTEST_ARGS
                                                     # a pytest tier on N workers, its leftover
                                                     # checks (test_zz_*.py) after, alone
    python -m tests.timetable lanes A='CMD' B='CMD'  # commands side by side, output prefixed
    python -m tests.timetable show                   # print the table, write time-table.txt
    python -m tests.timetable count                  # tests and assert statements per tier

Each pytest session of a tier (a tier may hold several: the MPI tier runs once per rank count
and library) writes its tests' times beside the tiers' (the plugin below, in
``tests/conftest.py``): a test's time is its set-up, call and tear-down added up, so a
module-scoped fixture's cost lands on the test that paid for it. Under ``pytest-xdist`` the
controller writes them (the workers' reports reach it); under ``mpiexec`` rank 0 does.

Everything goes to :data:`ARTIFACTS` (``$MPIWORKBENCH_ARTIFACTS``, or
``mpiworkbench-test-artifacts-<uid>`` in the system's temporary directory): never into the
checkout.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from mpiworkbench.core.load import cpu_jiffies

#: Where the suite writes what it keeps after a run (screenshots, the time table): outside the checkout.
ARTIFACTS = Path(os.environ.get("MPIWORKBENCH_ARTIFACTS")
                 or Path(tempfile.gettempdir()) / f"mpiworkbench-test-artifacts-{os.getuid()}")
#: The current run's records: one JSON file per tier command and per pytest session.
RECORDS = ARTIFACTS / "times"
#: The printed table, kept.
TABLE = ARTIFACTS / "time-table.txt"
#: The environment variable naming the tier a pytest session belongs to (set by ``run``).
TIER_VAR = "MPIWORKBENCH_TIER"
#: Names a JSON list of the MPI worlds' files in ``/dev/shm`` taken before a tier's first session
#: (:func:`tier`): its leftover checks, run in a session of their own after the others, compare
#: with it (``tests/conftest.py``).
SHM_AT_START_VAR = "MPIWORKBENCH_SHM_AT_START"
#: Above this many seconds a test must say why it must be that long (``pytest.mark.cost``).
COST_WHY_S = 60
#: Set (to anything but ``0``): the suite's full form (``make test-full``; ``tests/costs.py``).
FULL_VAR = "MPIWORKBENCH_TEST_FULL"
#: pytest's exit code for a session that selected no test.
NO_TESTS = 5
#: How many of the run's slowest tests the table lists.
SLOWEST = 10
#: The tiers, in the order ``make test`` runs them (and the table lists them).
TIERS = ("unit", "mpi", "cluster", "notebooks", "browser")
ROOT = Path(__file__).resolve().parents[1]


def full_form() -> bool:
    """Whether this run is the suite's full form (:data:`FULL_VAR`)."""
    return os.environ.get(FULL_VAR, "0") not in ("", "0")


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def begin() -> None:
    """Forget the previous run's records."""
    if RECORDS.is_dir():
        for path in RECORDS.glob("*.json"):
            path.unlink()
    RECORDS.mkdir(parents=True, exist_ok=True)


def run(tier: str, command: list[str], env: dict[str, str] | None = None) -> int:
    """Run *command* (its exit code returned) with :data:`TIER_VAR` set to *tier* (and *env*);
    record its wall time, and the machine's busy and total CPU ticks meanwhile (whatever ran:
    lanes overlap), which tell whether the machine had cores to spare."""
    start = time.time()
    t0 = time.monotonic()
    ticks = cpu_jiffies()
    print(f"== {tier}: {' '.join(command)}", flush=True)
    # a tier is a run of its own: nothing of a pytest-xdist worker that may have started it
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith("PYTEST_XDIST_") and k != "MPIWORKBENCH_TEST_WORKER"}
    code = subprocess.call(command, cwd=ROOT, env={**inherited, **(env or {}), TIER_VAR: tier})
    seconds, after = time.monotonic() - t0, cpu_jiffies()
    cpu = None if ticks is None or after is None else [after[0] - ticks[0], after[1] - ticks[1]]
    _write(RECORDS / f"tier-{tier}-{os.getpid()}-{time.time_ns()}.json",
           {"tier": tier, "command": command, "start": start, "seconds": seconds, "exit": code, "cpu": cpu,
            "form": "full" if full_form() else "fast"})
    return code


def tier(name: str, workers: int, dist: str, args: list[str]) -> int:
    """Run the pytest tier *name* (*args*: pytest's paths and options) in up to three sessions:

    1. its tests on *workers* processes (``pytest-xdist``), but for those marked ``alone``;
    2. the tests marked ``alone`` (they measure or load the whole machine), one at a time;
    3. its leftover checks (``test_zz_*.py`` in the tier's directories), once every other test
       of the tier has ended.

    All share the run's marker (``MPIWORKBENCH_TEST_RUN``: which processes are this run's), one
    IPython directory (removed at the end) and the ``/dev/shm`` baseline taken before the first,
    so the checks see what the whole tier left.
    The first failing exit code is returned; the later sessions run even after a failure (the
    checks stop what was left)."""
    from tests.process_tree import world_files

    directories = [ROOT / a for a in args if (ROOT / a).is_dir()]  # ROOT / an absolute path: that path
    options = [a for a in args if not (ROOT / a).is_dir()]
    last = sorted(p for d in directories for p in d.glob("test_zz_*.py"))
    baseline = RECORDS / f"shm-{name}-{os.getpid()}-{int(time.time())}.json"
    _write(baseline, sorted(world_files()))
    ipython_dir = tempfile.mkdtemp(prefix="mpiwb-test-ipython-")  # one for the tier (tests/conftest.py)
    env = {"MPIWORKBENCH_TEST_RUN": os.environ.get("MPIWORKBENCH_TEST_RUN") or uuid.uuid4().hex,
           SHM_AT_START_VAR: str(baseline), "MPIWORKBENCH_TEST_IPYTHONDIR": ipython_dir, "IPYTHONDIR": ipython_dir}
    pytest = [sys.executable, "-m", "pytest"]
    ignore = [f"--ignore={p}" for p in last]
    # the workers take the modules in the order collection gives them (tests/costs.py: heaviest first)
    spread = ["-n", str(workers), "--dist", dist, "--no-loadscope-reorder"] if workers > 1 else []
    try:
        codes = [run(name, [*pytest, *spread, *args, *ignore, "-m", "not alone"], env)]
        if any("mark.alone" in p.read_text() for d in directories for p in d.rglob("test_*.py")):
            codes.append(run(name, [*pytest, *args, *ignore, "-m", "alone"], env))
        if last:
            codes.append(run(name, [*pytest, *options, *map(str, last)], env))
    finally:
        shutil.rmtree(ipython_dir, ignore_errors=True)
    # a session that selected nothing (no test marked alone, say) has nothing to fail
    return next((code for code in codes if code not in (0, NO_TESTS)), 0)


def lanes(commands: dict[str, list[str]]) -> int:
    """Run each lane's command (``name -> argv``) at once, side by side, each line of their output
    prefixed by ``[name]``; the first failing exit code is returned once every lane has ended.

    ``make test`` runs the cluster tier in one lane and the notebook then browser tiers in the
    other, after the unit and MPI tiers: much of the lanes' time is waiting (for Slurm, JupyterLab,
    Chromium, a stalled controller), so on 2 cores they overlap, though the cores stay busy; each
    tier still runs its own leftover checks last. (The unit and MPI tiers do not: run in the lanes, the MPI tier took three
    times as long, its busy-polling ranks waiting for time slices.)"""
    import threading

    lock = threading.Lock()
    procs = {name: subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    bufsize=0) for name, argv in commands.items()}

    def relay(name: str, proc: subprocess.Popen) -> None:
        pending = b""
        while True:
            chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            with lock:
                for line in lines:
                    sys.stdout.write(f"[{name}] {line.decode(errors='replace')}\n")
                sys.stdout.flush()
        if pending:
            with lock:
                sys.stdout.write(f"[{name}] {pending.decode(errors='replace')}\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=relay, args=item, daemon=True) for item in procs.items()]
    for thread in threads:
        thread.start()
    codes = {name: proc.wait() for name, proc in procs.items()}
    for thread in threads:
        thread.join()
    for name, code in codes.items():
        print(f"[{name}] lane ended with exit code {code}", flush=True)
    return next((code for code in codes.values() if code != 0), 0)


def record_session(tier: str, label: str, tests: dict[str, float], outcomes: dict[str, str],
                   failures: dict[str, str] | None = None, cpu: dict[str, float] | None = None) -> None:
    """Keep one pytest session's test times (``nodeid -> seconds``), outcomes, for each
    failed test its first reason (``nodeid -> line``), and the CPU seconds each test's processes
    spent (``nodeid -> seconds``: tests/conftest.py says what is counted)."""
    _write(RECORDS / f"tests-{tier}-{os.getpid()}-{int(time.time() * 1000)}.json",
           {"tier": tier, "label": label, "tests": tests, "outcomes": outcomes, "failures": failures or {},
            "cpu": cpu or {}})


def record_costs(tier: str, declared: dict[str, list], full_only: list[str] = ()) -> None:
    """Keep what the tests of a session declared they cost (``nodeid -> [seconds, why]``), and
    which of its tests only the suite's full form runs."""
    _write(RECORDS / f"costs-{tier}-{os.getpid()}-{int(time.time() * 1000)}.json",
           {"tier": tier, "declared": declared, "full_only": list(full_only)})


def _records(kind: str) -> list[dict]:
    found = []
    for path in sorted(RECORDS.glob(f"{kind}-*.json")):
        try:
            found.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return found


def _by_module(seconds: dict[str, float]) -> dict[str, float]:
    """``nodeid -> seconds`` added up by test module."""
    modules: dict[str, float] = {}
    for nodeid, value in seconds.items():
        module = nodeid.split("::")[0]
        modules[module] = modules.get(module, 0.0) + value
    return modules


def _clock(seconds: float) -> str:
    return f"{seconds:7.0f} s  ({seconds / 60:4.1f} min)"


def _busy(runs: list[dict]) -> str:
    """``", machine NN % busy"``: the share of the machine's CPU time that was busy while *runs*
    ran (records without ticks are left out; nothing when none has them)."""
    ticks = [t["cpu"] for t in runs if t.get("cpu") and t["cpu"][1] > 0]
    if not ticks:
        return ""
    return f", machine {100 * sum(b for b, _ in ticks) / sum(total for _, total in ticks):.0f} % busy"


def table() -> str:
    """The time table of the records now in :data:`RECORDS`."""
    tiers = _records("tier")
    sessions = _records("tests")
    forms = sorted({t.get("form", "fast") for t in tiers})
    form = f"; the suite's {' and '.join(forms)} form" if forms else ""
    lines = [f"The suite's time table (wall time per tier; the tests' own times added up within it{form})", ""]
    order = {name: i for i, name in enumerate(TIERS)}
    total = 0.0
    spans = []
    for tier in sorted({t["tier"] for t in tiers}, key=lambda name: (order.get(name, len(order)), name)):
        runs = [t for t in tiers if t["tier"] == tier]
        seconds = sum(t["seconds"] for t in runs)
        spans.extend((t["start"], t["start"] + t["seconds"]) for t in runs)
        total += seconds
        tests = [s for s in sessions if s["tier"] == tier]
        count = sum(len(s["outcomes"]) for s in tests)
        passed = sum(1 for s in tests for o in s["outcomes"].values() if o == "passed")
        failed = sum(1 for s in tests for o in s["outcomes"].values() if o == "failed")
        status = "failed" if any(t["exit"] not in (0, NO_TESTS) for t in runs) else "ok"
        lines.append(f"  {tier:<10} {_clock(seconds)}  {count:4d} tests ({passed} passed, {failed} failed)  "
                     f"{len(runs)} command(s), {status}{_busy(runs)}")
    if spans:
        wall = max(end for _, end in spans) - min(start for start, _ in spans)
        lines.append(f"  {'all tiers':<10} {_clock(wall)}  from the first tier's start to the last one's end"
                     + (" (tiers overlapped)" if wall < total - 1 else ""))
    slowest = sorted(((seconds, s["tier"], s["label"], nodeid) for s in sessions
                      for nodeid, seconds in s["tests"].items()), reverse=True)[:SLOWEST]
    if slowest:
        lines += ["", f"The {len(slowest)} slowest tests of the run (set-up + call + tear-down):"]
        for seconds, tier, label, nodeid in slowest:
            where = f"{tier}, {label}" if label else tier
            lines.append(f"  {seconds:7.1f} s  {nodeid}  [{where}]")
    hungriest = sorted(((seconds, s["tier"], module) for s in sessions
                        for module, seconds in _by_module(s.get("cpu", {})).items()), reverse=True)[:SLOWEST]
    if hungriest:
        counted = sum(seconds for s in sessions for seconds in s.get("cpu", {}).values())
        lines += ["", f"The {len(hungriest)} test modules that took the most CPU ({counted:.0f} CPU-s counted in all: "
                      "each test's processes and those it started and waited for):"]
        lines += [f"  {seconds:7.1f} CPU-s  {module}  [{tier}]" for seconds, tier, module in hungriest]
    outcomes = [o for session in sessions for o in session["outcomes"].values()]
    closing = (f"suite: {outcomes.count('passed')} passed, {outcomes.count('failed')} failed, "
               f"{outcomes.count('skipped')} skipped")
    costs = _records("costs")
    declared = {nodeid for record in costs for nodeid in record["declared"]}
    full_only = {nodeid for record in costs for nodeid in record.get("full_only", [])}
    if full_only and "full" not in forms:
        closing += f", {len(full_only)} of the full form only not run (make test-full)"
    unsaid = sorted(((seconds, nodeid) for s in sessions for nodeid, seconds in s["tests"].items()
                     if seconds > COST_WHY_S and nodeid not in declared), reverse=True)
    if unsaid:
        lines += ["", f"Tests over {COST_WHY_S} s that do not say what they cost and why "
                      "(pytest.mark.cost(SECONDS, \"why\"): docs/architecture.md):"]
        lines += [f"  {seconds:7.1f} s  {nodeid}" for seconds, nodeid in unsaid]
    failed = [(s["tier"], s["label"], nodeid, s.get("failures", {}).get(nodeid, ""))
              for s in sessions for nodeid, outcome in s["outcomes"].items() if outcome == "failed"]
    if failed:
        lines += ["", "Failed:"]
        for tier, label, nodeid, why in failed:
            where = f"{tier}, {label}" if label else tier
            lines.append(f"  {nodeid}  [{where}]")
            lines += [f"      {line}" for line in why.splitlines()]
    if outcomes:  # every tier's tests in one closing line, the last of the run
        lines += ["", closing]
    return "\n".join(lines)


def show() -> None:
    text = table()
    TABLE.parent.mkdir(parents=True, exist_ok=True)
    TABLE.write_text(text + "\n")
    print(f"\n(kept in {TABLE})\n{text}", flush=True)  # the table's own closing line stays the run's last


# -- counting what the suite checks ------------------------------------------------------------

def assert_statements(path: Path) -> int:
    """``assert`` statements in *path* (a test file, or every file under a directory): the
    suite's checks, counted statically."""
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return sum(isinstance(node, ast.Assert) for file in files
               for node in ast.walk(ast.parse(file.read_text(), str(file))))


def count() -> str:
    """Tests collected and ``assert`` statements, per tier (the MPI tier collected once, at one
    rank), and the asserts of the helpers the tiers share (``tests/*.py``)."""
    lines = [f"  {'tier':<10} {'tests':>6} {'asserts':>8}"]
    tests_dir = ROOT / "tests"
    for tier in TIERS:
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              str(tests_dir / tier)], capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, "MPIWORKBENCH_TREE_CHECK": "0"}).stdout
        collected = sum(1 for line in out.splitlines() if "::" in line)
        lines.append(f"  {tier:<10} {collected:6d} {assert_statements(tests_dir / tier):8d}")
    shared = sum(assert_statements(p) for p in tests_dir.glob("*.py"))
    lines.append(f"  {'shared':<10} {'':6} {shared:8d}  (helpers: tests/*.py)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("begin", "run", "tier", "lanes", "show", "count"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "lanes":  # lanes NAME=COMMAND ...: each COMMAND split as a shell would
        import shlex

        return lanes({spec.split("=", 1)[0]: shlex.split(spec.split("=", 1)[1]) for spec in argv[1:]})
    if argv[0] == "tier":
        parser = argparse.ArgumentParser(prog="python -m tests.timetable tier")
        parser.add_argument("name")
        parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers (1: none)")
        parser.add_argument("--dist", default="loadfile", help="pytest-xdist's --dist (default: loadfile)")
        options, rest = parser.parse_known_args(argv[1:])
        if rest[:1] == ["--"]:
            rest = rest[1:]
        return tier(options.name, options.workers, options.dist, rest)
    if argv[0] == "begin":
        begin()
    elif argv[0] == "run":
        if len(argv) < 4 or argv[2] != "--":
            print("usage: python -m tests.timetable run TIER -- CMD ...", file=sys.stderr)
            return 2
        return run(argv[1], argv[3:])
    elif argv[0] == "show":
        show()
    else:
        print(count())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
