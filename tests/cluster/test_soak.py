"""The soak benchmark's short form (``benchmarks/soak.py``, the same code path as its 30-minute
run): one 2-rank world started by one notebook process, two more attached — a wave panel and a
CG panel playing, cells through ``wb.run`` and ``%%px``, a speedup sweep, a trace, two restarts
followed by the others, an idle gap — for three minutes. Nothing dies, no call fails, no
process's memory grows beyond the bound, and after the final stop nothing of it is left
running or in ``/dev/shm``. Memory is asserted, never time."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The short form: three minutes of the soak's schedule (minutes, except the seconds of
#: interval, burst and pause): restarts at 1.83 and 2.33 min, idle 1.25-1.75 min, memory
#: compared with minute 1; a few thousand frames and calls.
SHORT = {"minutes": 3, "interval": 15, "restart_every": 1, "idle": 0.5, "idle_every": 3, "settle": 1,
         "burst": 20, "pause": 10}
#: Restarts the short schedule plans (see ``Schedule.restarts``).
RESTARTS = 2
#: Wall-clock guard (s): the schedule, the world's start and stop, and the soak's own limits.
GUARD_S = 900


def soak_module():
    """``benchmarks/soak.py`` as a module (``benchmarks`` is no package)."""
    spec = importlib.util.spec_from_file_location("mpiworkbench_soak_benchmark", ROOT / "benchmarks" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The short soak's report; its processes are ended by ``run_soak`` itself, whatever happens."""
    soak = soak_module()
    workdir = tmp_path_factory.mktemp("soak")
    return soak.run_soak(**SHORT, workdir=workdir / "run", json_path=workdir / "soak.json", out=print)


pytestmark = [pytest.mark.slow, pytest.mark.timeout(GUARD_S),
              pytest.mark.cost(195, (
                               "a world used by three notebooks for three minutes (two restarts, an idle gap, memory"
                               " compared across minutes): its length is what it tests"))]


def test_nothing_dies_and_no_call_fails(report):
    text = report["text"]
    assert report["deaths"] == [], text
    assert report["failed"] == 0, text
    clients = report["clients"]
    assert all(status["phase"] == "stopped" for status in clients.values()), text
    # every notebook did its part: frames of both panels, cells, a sweep and a trace
    wave, cg, cells = (clients[k] for k in sorted(clients))
    assert wave["frames"] > 0 and cg["frames"] > 0, text
    assert cells["runs"] > 0 and cells["cells"] > 0 and cells["sweeps"] >= 1 and cells["traces"] >= 1, text


def test_every_restart_is_done_and_followed_by_the_other_notebooks(report):
    assert report["restarts_planned"] == RESTARTS and report["restarts_done"] == RESTARTS, report["text"]
    assert set(report["restarts_followed"].values()) == {RESTARTS}, report["text"]


def test_no_process_grows_beyond_the_memory_bound(report):
    failing = [d for d in report["drifts"] if not d["ok"]]
    assert failing == [], report["text"]
    roles = {d["role"] for d in report["drifts"]}
    assert {"client 0", "client 1", "client 2", "controller", "rank 0", "rank 1"} <= roles


def test_nothing_is_left_running_or_in_dev_shm_after_the_final_stop(report):
    assert report["left"] == [], report["text"]
    assert report["shm"]["ours_left"] == [], report["text"]
    assert report["ok"], report["text"]
