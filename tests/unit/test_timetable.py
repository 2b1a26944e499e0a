"""The suite's own bookkeeping (``tests/timetable.py``, ``tests/process_tree.py``): the time table
``make test`` ends with, the tier runner that keeps the leftover checks last and alone, and the
leftover checks themselves, which must fail on a planted leftover. (~15 s: two small pytest runs.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from mpiworkbench.core import shm
from mpiworkbench.core.load import cpu_jiffies
from mpiworkbench.core.processes import cmdline
from tests import timetable
from tests.process_tree import leftover_cluster_processes, leftover_world_files, world_files


@pytest.fixture
def records(tmp_path, monkeypatch):
    """The time table's records in a directory of the test's."""
    monkeypatch.setattr(timetable, "RECORDS", tmp_path / "times")
    monkeypatch.setattr(timetable, "TABLE", tmp_path / "time-table.txt")
    timetable.begin()
    return tmp_path / "times"


def test_the_table_lists_each_tier_in_order_and_the_slowest_tests(records):
    timetable._write(records / "tier-cluster-1.json", {"tier": "cluster", "command": ["x"], "start": 100.0,
                                                      "seconds": 50.0, "exit": 0})
    timetable._write(records / "tier-unit-1.json", {"tier": "unit", "command": ["x"], "start": 10.0,
                                                   "seconds": 20.0, "exit": 0})
    timetable._write(records / "tier-unit-2.json", {"tier": "unit", "command": ["y"], "start": 30.0,
                                                   "seconds": 5.0, "exit": 1})
    tests = {f"tests/cluster/test_x.py::test_{i}": float(i) for i in range(12)}
    timetable.record_session("cluster", "", tests, {nodeid: "passed" for nodeid in tests})
    timetable.record_session("unit", "", {"tests/unit/test_y.py::test_a": 30.5},
                             {"tests/unit/test_y.py::test_a": "failed"},
                             {"tests/unit/test_y.py::test_a": "call: AssertionError: assert 1 == 2"})
    text = timetable.table()
    unit, cluster = (next(line for line in text.splitlines() if line.strip().startswith(t)) for t in ("unit", "cluster"))
    assert text.index(unit) < text.index(cluster)  # the order make test runs them in
    assert "25 s" in unit and "1 tests (0 passed, 1 failed)" in unit and "2 command(s), failed" in unit
    assert "50 s" in cluster and "12 tests (12 passed, 0 failed)" in cluster and cluster.endswith("ok")
    assert "all tiers      140 s" in text  # from the first start (10) to the last end (150)
    slowest = [line for line in text.split("slowest tests")[1].split("Failed:")[0].splitlines()[1:] if line.endswith("]")]
    assert len(slowest) == timetable.SLOWEST
    assert "30.5 s  tests/unit/test_y.py::test_a  [unit]" in slowest[0]
    assert "11.0 s  tests/cluster/test_x.py::test_11  [cluster]" in slowest[1]
    assert not any("test_x.py::test_1 " in line for line in slowest)  # 1.0 s: not among the ten
    assert text.splitlines()[-1] == "suite: 12 passed, 1 failed, 0 skipped"  # the run's closing line
    # the failed test and its reason just above it: a log that keeps only its tail still says them
    assert text.splitlines()[-5:-1] == ["Failed:", "  tests/unit/test_y.py::test_a  [unit]",
                                        "      call: AssertionError: assert 1 == 2", ""]
    timetable.show()
    assert timetable.TABLE.read_text().startswith("The suite's time table")


def test_the_table_adds_up_each_modules_cpu_and_lists_the_hungriest(records):
    cpu = {f"tests/cluster/test_m{i}.py::test_{j}": float(i) for i in range(12) for j in range(2)}
    timetable.record_session("cluster", "", dict.fromkeys(cpu, 1.0), dict.fromkeys(cpu, "passed"), cpu=cpu)
    text = timetable.table()
    assert "(132 CPU-s counted in all" in text  # 2 × (0 + 1 + … + 11)
    hungriest = [line for line in text.split("took the most CPU")[1].splitlines()[1:] if line.endswith("]")]
    assert len(hungriest) == timetable.SLOWEST
    assert hungriest[0].split() == ["22.0", "CPU-s", "tests/cluster/test_m11.py", "[cluster]"]  # both tests of m11
    assert not any("test_m1.py" in line for line in hungriest)  # 2 CPU-s: not among the ten


def test_each_test_counts_the_cpu_of_the_processes_it_started(tmp_path):
    """The suite's own hooks (tests/conftest.py as a plugin) in a pytest run of a file of two tests:
    the one whose child process computes for a second is charged with it, the other is not."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("import subprocess, sys\n\n"
                     "def test_a_child_computes():\n"
                     "    subprocess.run([sys.executable, '-c', 'import time\\nt = time.process_time()\\n"
                     "while time.process_time() - t < 1.0: pass'], check=True)\n\n"
                     "def test_idle():\n    pass\n")
    artifacts = tmp_path / "artifacts"
    env = {**os.environ, timetable.TIER_VAR: "probe", "MPIWORKBENCH_ARTIFACTS": str(artifacts),
           "MPIWORKBENCH_TREE_CHECK": "0"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), str(probe)], cwd=timetable.ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(p.read_text()) for p in (artifacts / "times").glob("tests-probe-*.json")]
    cpu = {nodeid.split("::")[1]: seconds for nodeid, seconds in record["cpu"].items()}
    assert cpu["test_a_child_computes"] >= 0.9, cpu
    assert cpu["test_idle"] < 0.5, cpu


def test_a_tier_says_how_busy_the_machine_was_while_it_ran(records):
    # two commands of one tier: 300 of 400 ticks busy, then 100 of 400; one older record without
    timetable._write(records / "tier-mpi-1.json", {"tier": "mpi", "command": ["x"], "start": 1.0,
                                                  "seconds": 10.0, "exit": 0, "cpu": [300, 400]})
    timetable._write(records / "tier-mpi-2.json", {"tier": "mpi", "command": ["y"], "start": 11.0,
                                                  "seconds": 10.0, "exit": 0, "cpu": [100, 400]})
    timetable._write(records / "tier-unit-1.json", {"tier": "unit", "command": ["z"], "start": 0.0,
                                                   "seconds": 1.0, "exit": 0})
    lines = timetable.table().splitlines()
    assert next(line for line in lines if line.strip().startswith("mpi")).endswith("ok, machine 50 % busy")
    assert next(line for line in lines if line.strip().startswith("unit")).endswith("ok")


def test_a_command_run_records_the_machines_ticks_meanwhile(records):
    before = cpu_jiffies()
    assert timetable.run("unit", [sys.executable, "-c", "sum(range(3_000_000))"]) == 0
    (record,) = (json.loads(p.read_text()) for p in records.glob("tier-unit-*.json"))
    busy, total = record["cpu"]
    assert 0 < busy <= total and total <= cpu_jiffies()[1] - before[1]


def test_begin_forgets_the_previous_run(records):
    timetable.record_session("unit", "", {"a": 1.0}, {"a": "passed"})
    timetable.begin()
    assert list(records.glob("*.json")) == []
    assert "slowest" not in timetable.table()


def test_a_tier_runs_its_leftover_checks_last_alone_with_the_tiers_marker(records, tmp_path):
    """A tier of three files: the plain tests run on two workers, the one marked ``alone`` after
    them, the leftover check after that, in a session of its own sharing the marker."""
    tier = tmp_path / "tier"
    tier.mkdir()
    log = tmp_path / "log.jsonl"
    note = textwrap.dedent(f"""\
        import json, os, time

        def note(what):
            with open({str(log)!r}, "a") as f:
                f.write(json.dumps({{"what": what, "t": time.time(), "pid": os.getpid(),
                                    "run": os.environ["MPIWORKBENCH_TEST_RUN"],
                                    "worker": os.environ.get("PYTEST_XDIST_WORKER"),
                                    "baseline": os.environ.get({timetable.SHM_AT_START_VAR!r})}}) + "\\n")
        """)
    (tier / "note.py").write_text(note)
    (tier / "conftest.py").write_text("import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n"
                                      "def pytest_configure(config):\n"
                                      "    config.addinivalue_line('markers', 'alone: one at a time')\n")
    (tier / "test_a.py").write_text("import time\nfrom note import note\n\n"
                                    "def test_one():\n    time.sleep(0.5)\n    note('a1')\n\n")
    (tier / "test_b.py").write_text("import pytest\nfrom note import note\n\n"
                                    "def test_two():\n    note('b')\n\n"
                                    "@pytest.mark.alone\ndef test_alone():\n    note('alone')\n")
    (tier / "test_zz_last.py").write_text("from note import note\n\ndef test_last():\n    note('zz')\n")
    code = timetable.tier("probe", 2, "loadfile", [str(tier), "-p", "no:cacheprovider"])
    assert code == 0
    notes = [json.loads(line) for line in log.read_text().splitlines()]
    order = [n["what"] for n in sorted(notes, key=lambda n: n["t"])]
    assert sorted(order[:2]) == ["a1", "b"] and order[2:] == ["alone", "zz"], order
    first = {n["what"]: n for n in notes}
    assert first["a1"]["worker"] and first["b"]["worker"] and first["a1"]["worker"] != first["b"]["worker"]
    assert first["alone"]["worker"] is None and first["zz"]["worker"] is None  # no workers: alone
    assert len({n["run"] for n in notes}) == 1, "one marker for the tier's sessions"
    assert len({n["baseline"] for n in notes}) == 1 and Path(first["zz"]["baseline"]).exists()
    tiers = [json.loads(p.read_text()) for p in records.glob("tier-probe-*.json")]
    assert len(tiers) == 3 and all(t["exit"] == 0 for t in tiers)


def test_a_failing_tier_still_runs_its_checks_and_fails(records, tmp_path):
    tier = tmp_path / "tier"
    tier.mkdir()
    done = tmp_path / "checked"
    (tier / "test_a.py").write_text("def test_fails():\n    assert 1 == 2\n")
    (tier / "test_zz_last.py").write_text(f"def test_last():\n    open({str(done)!r}, 'w').close()\n")
    assert timetable.tier("probe", 1, "loadfile", [str(tier), "-p", "no:cacheprovider"]) == 1
    assert done.exists()


def test_a_planted_world_file_is_a_leftover():
    at_start = world_files()
    planted = Path(shm.SHM_DIR) / f"mpich_shm_planted{uuid.uuid4().hex[:8]}"
    planted.write_bytes(b"\0" * 64)
    try:
        left = leftover_world_files(at_start, settle=1.0)
    finally:
        planted.unlink()
    assert any(line.startswith(f"{planted} (64 bytes") for line in left), left
    assert str(planted) not in "".join(leftover_world_files(at_start, settle=0.0))


def test_a_planted_process_of_the_run_is_a_leftover():
    # a process of this run (the marker is inherited) whose command line looks like an engine's
    planted = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(120)", "ipengine"],
                               env={**os.environ})
    try:
        # until the child has exec'd, /proc shows the forking test's own command line
        deadline = time.monotonic() + 60
        while "time.sleep(120)" not in cmdline(planted.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        found = [line for line in leftover_cluster_processes() if line.startswith(f"{planted.pid}:")]
        assert found and "ipengine" in found[0], leftover_cluster_processes()
    finally:
        planted.kill()
        planted.wait()
    assert not [line for line in leftover_cluster_processes() if line.startswith(f"{planted.pid}:")]


def _pytest(directory: Path, *args: str, full: bool = False) -> subprocess.CompletedProcess:
    """pytest in a subprocess on *directory* with the cost plugin (tests.costs), from the checkout,
    in the suite's fast form (or its *full* one)."""
    env = {k: v for k, v in os.environ.items() if k != timetable.FULL_VAR}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.costs", "-p", "no:cacheprovider",
                           "-o", "markers=full: the full form's", str(directory), *args], capture_output=True,
                          text=True, timeout=300, cwd=timetable.ROOT,
                          env={**env, timetable.FULL_VAR: "1"} if full else env)


_FORMS = ("import pytest\nfrom tests.costs import fast_or_full\n\n"
          "def test_both():\n    print('rounds', fast_or_full(2, 10))\n\n"
          "@pytest.mark.full('the same at three more sizes')\ndef test_more_sizes():\n    pass\n")


def test_the_fast_form_leaves_out_the_full_forms_tests_and_takes_its_fast_counts(tmp_path):
    (tmp_path / "test_forms.py").write_text(_FORMS)
    fast = _pytest(tmp_path, "-v", "-s")
    assert fast.returncode == 0, fast.stdout + fast.stderr
    assert "rounds 2" in fast.stdout and "1 passed, 1 deselected" in fast.stdout, fast.stdout
    assert "test_more_sizes" not in fast.stdout, fast.stdout
    full = _pytest(tmp_path, "-v", "-s", full=True)
    assert full.returncode == 0, full.stdout + full.stderr
    assert "rounds 10" in full.stdout and "2 passed" in full.stdout and "deselected" not in full.stdout, full.stdout


@pytest.mark.parametrize("mark", ["pytest.mark.full", "pytest.mark.full('  ')"])
def test_a_test_of_the_full_form_only_must_say_what_it_adds(tmp_path, mark):
    (tmp_path / "test_more.py").write_text(f"import pytest\n\n@{mark}\ndef test_again():\n    pass\n")
    for full in (False, True):
        out = _pytest(tmp_path, "--collect-only", "-q", full=full)
        assert out.returncode != 0 and "test_more.py::test_again: pytest.mark.full takes what the test adds" in out.stderr, \
            out.stdout + out.stderr


def test_the_table_says_which_form_ran_and_what_the_fast_one_left_out(records):
    timetable.record_session("cluster", "", {"t.py::a": 3.0}, {"t.py::a": "passed"})
    timetable.record_costs("cluster", {}, ["t.py::again", "t.py::more"])
    # the other worker's record (another process: another file) names the same tests
    timetable._write(records / "costs-cluster-worker2.json", {"tier": "cluster", "declared": {},
                                                             "full_only": ["t.py::again", "t.py::more"]})
    assert timetable.run("cluster", [sys.executable, "-c", "pass"]) == 0
    text = timetable.table()
    assert "the suite's fast form" in text.splitlines()[0]
    assert text.splitlines()[-1] == "suite: 1 passed, 0 failed, 0 skipped, 2 of the full form only not run (make test-full)"


def test_the_heaviest_declared_modules_come_first_and_the_leftover_checks_last(tmp_path):
    (tmp_path / "test_a_cheap.py").write_text("def test_1():\n    pass\n\ndef test_2():\n    pass\n")
    (tmp_path / "test_b_heavy.py").write_text("import pytest\n\npytestmark = pytest.mark.cost(90, 'a Slurm time limit')\n\n"
                                              "def test_2():\n    pass\n\ndef test_1():\n    pass\n")
    (tmp_path / "test_c_one.py").write_text("import pytest\n\n@pytest.mark.cost(30)\ndef test_x():\n    pass\n")
    (tmp_path / "test_zz_last.py").write_text("import pytest\n\npytestmark = pytest.mark.cost(50)\n\n"
                                              "def test_left():\n    pass\n")
    out = _pytest(tmp_path, "--collect-only", "-q")
    assert out.returncode == 0, out.stdout + out.stderr
    order = [line.split("::")[0].rsplit("/", 1)[-1] + "::" + line.split("::")[1]
             for line in out.stdout.splitlines() if "::" in line]
    assert order == ["test_b_heavy.py::test_2", "test_b_heavy.py::test_1",  # its own order kept
                     "test_c_one.py::test_x", "test_a_cheap.py::test_1", "test_a_cheap.py::test_2",
                     "test_zz_last.py::test_left"], order


@pytest.mark.parametrize("mark", ["pytest.mark.cost(61)", "pytest.mark.cost(120, '  ')"])
def test_a_test_over_a_minute_must_say_why(tmp_path, mark):
    (tmp_path / "test_slow.py").write_text(f"import pytest\n\n@{mark}\ndef test_long():\n    pass\n")
    out = _pytest(tmp_path, "--collect-only", "-q")
    assert out.returncode != 0
    assert "test_slow.py::test_long costs" in out.stderr and "does not say why it must be that long" in out.stderr, out.stderr


def test_a_cost_is_a_positive_number_of_seconds(tmp_path):
    (tmp_path / "test_bad.py").write_text("import pytest\n\npytestmark = pytest.mark.cost('long')\n\n"
                                          "def test_x():\n    pass\n")
    out = _pytest(tmp_path, "--collect-only", "-q")
    assert out.returncode != 0 and "takes the seconds a test costs first" in out.stderr, out.stderr


def test_the_table_names_slow_tests_that_declare_no_cost(records):
    timetable.record_session("cluster", "", {"t.py::slow": 75.0, "t.py::said": 200.0, "t.py::quick": 3.0},
                             {"t.py::slow": "passed", "t.py::said": "passed", "t.py::quick": "passed"})
    timetable.record_costs("cluster", {"t.py::said": [200, "a Slurm time limit"]})
    text = timetable.table()
    unsaid = text.split("do not say what they cost")[1]
    assert "t.py::slow" in unsaid and "t.py::said" not in unsaid and "t.py::quick" not in unsaid


def test_lanes_run_side_by_side_prefix_their_lines_and_fail_with_the_first_failure(capsys):
    # each lane waits for the other's file: they can only both finish if they run at once
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a", Path(tmp) / "b"
        wait = "import pathlib, sys, time\n{mine}.touch()\nend = time.monotonic() + 60\n" \
               "while not {other}.exists() and time.monotonic() < end:\n    time.sleep(0.05)\n" \
               "print('one'); print('two', end='')\nsys.exit({code})"
        code = timetable.lanes({
            "first": [sys.executable, "-c", wait.format(mine=f"pathlib.Path({str(a)!r})",
                                                        other=f"pathlib.Path({str(b)!r})", code=0)],
            "second": [sys.executable, "-c", wait.format(mine=f"pathlib.Path({str(b)!r})",
                                                         other=f"pathlib.Path({str(a)!r})", code=3)]})
    out = capsys.readouterr().out.splitlines()
    assert code == 3
    for lane in ("first", "second"):
        assert [line for line in out if line.startswith(f"[{lane}] ")][:2] == [f"[{lane}] one", f"[{lane}] two"], out
    assert "[first] lane ended with exit code 0" in out and "[second] lane ended with exit code 3" in out


def test_a_process_left_by_a_tiers_tests_fails_its_leftover_check(records, tmp_path):
    """End to end through the tier runner: a test of the first session leaves a process that looks
    like an engine behind (in a session of its own, as an orphaned engine would be); the leftover
    check, in the later session, finds it by the tier's marker and fails the tier."""
    tier = tmp_path / "tier"
    tier.mkdir()
    pid_file = tmp_path / "planted.pid"
    (tier / "test_a.py").write_text(textwrap.dedent(f"""\
        import subprocess, sys

        def test_leaves_an_engine_behind():
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "ipengine"],
                                 start_new_session=True)
            open({str(pid_file)!r}, "w").write(str(p.pid))
        """))
    (tier / "test_zz_no_leftovers.py").write_text(textwrap.dedent("""\
        from tests.process_tree import leftover_cluster_processes

        def test_nothing_left():
            leftovers = leftover_cluster_processes()
            assert leftovers == [], leftovers
        """))
    try:
        assert timetable.tier("probe", 2, "loadfile", [str(tier), "-p", "no:cacheprovider"]) == 1
        outcomes = [json.loads(p.read_text()) for p in records.glob("tier-probe-*.json")]
        assert sorted(o["exit"] for o in outcomes) == [0, 1]  # first, checks (no test is marked alone)
    finally:
        if pid_file.exists():
            import signal

            pid = int(pid_file.read_text())
            if "time.sleep(120)" in cmdline(pid):
                os.kill(pid, signal.SIGKILL)
