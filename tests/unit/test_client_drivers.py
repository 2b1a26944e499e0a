"""The client's drivers without a cluster: one loop per feature, the same result whether it is
waited on blocking (code, notebooks) or in the background (a panel's Run), and panels that go
through them. The session is a stand-in that answers engine calls at once."""

from __future__ import annotations

import asyncio

import pytest

from mpiworkbench.drivers import bench, speedup
from mpiworkbench.drivers.cg import CGHandle
from mpiworkbench.client.calls.waiting import drive, drive_async
from mpiworkbench.drivers.wave import WaveHandle
from mpiworkbench.speedup import SpeedupSpec


class FakeResult:
    """An engine call that is ready on the second look (so a background wait really waits)."""

    def __init__(self, value):
        self.value, self.looks = value, 0

    def ready(self) -> bool:
        self.looks += 1
        return self.looks > 1


class FakeSweep:
    """The engines' BenchRun as a RemoteObject sees it: one size per ``step``."""

    def __init__(self, benchmark, backends, sizes, fail_at: int | None = None):
        self.benchmark, self.backends, self.sizes = benchmark, backends, sizes
        self.done, self.deleted, self.fail_at = 0, False, fail_at

    def attr(self, name):
        return [getattr(self, name)] * 2

    def call_async(self, method):
        assert method == "step"
        if self.done == self.fail_at:
            raise RuntimeError("engines gone")
        size = self.sizes[self.done]
        self.done += 1
        rows = [{"backend": b, "size": size, "t_us": 1.0} for b in self.backends]
        return FakeResult([rows, []])

    def root(self, method):
        assert method == "summary"
        rows = [{"backend": b, "size": s, "t_us": 1.0} for s in self.sizes[:self.done] for b in self.backends]
        return {"benchmark": self.benchmark, "rows": rows, "complete": self.done == len(self.sizes),
                "environment": {"warnings": [], "thread_level": "single"}, "skipped": {}}

    def delete(self):
        self.deleted = True


class FakeSession:
    n = 2
    thread_level = "single"
    timeout = 120.0

    def __init__(self):
        self.sweeps: list[FakeSweep] = []
        self.calls: list[tuple] = []

    def create(self, factory, benchmark, backends, sizes, policy, nranks=None):
        assert factory == bench.FACTORY
        self.sweeps.append(FakeSweep(benchmark, backends, sizes))
        return self.sweeps[-1]

    def run_async(self, func, *args):
        self.calls.append((func.__name__, *args))
        point = args[0]
        record = {**point, "times": [0.1 / point["nranks"]] * point["repeats"]}
        return FakeResult([record, None])

    def gather(self, ar):
        return ar.value


def test_a_sweep_gives_the_same_document_blocking_and_in_the_background():
    blocking_rows, background_rows = [], []
    doc = bench.run_on_workbench(FakeSession(), "allreduce", ["c", "mpi4py-buf"], "8,64",
                                 on_rows=lambda rows, p: blocking_rows.append((len(rows), p)))
    wb = FakeSession()
    again = asyncio.run(bench.run_async(wb, "allreduce", ["c", "mpi4py-buf"], "8,64",
                                        on_rows=lambda rows, p: background_rows.append((len(rows), p))))
    assert doc == again and doc["complete"] and [r["size"] for r in doc["rows"]] == [8, 8, 64, 64]
    assert blocking_rows == background_rows == [(2, {"done": 1, "total": 2}), (2, {"done": 2, "total": 2})]
    assert wb.sweeps[0].deleted  # the engines' sweep is gone once the loop ends


def test_a_sweep_stops_when_asked_and_is_deleted_however_it_ends():
    wb = FakeSession()
    doc = bench.run_on_workbench(wb, "allreduce", ["c"], "8,64,512", on_rows=lambda rows, p: None,
                                 should_stop=lambda: wb.sweeps[0].done == 1)
    assert [r["size"] for r in doc["rows"]] == [8] and doc["complete"] is False and wb.sweeps[0].deleted
    broken = FakeSweep("allreduce", ["c"], [8, 64], fail_at=1)
    with pytest.raises(RuntimeError, match="engines gone"):
        drive(wb, bench.sweep(broken))
    assert broken.deleted


def test_a_sweep_checks_its_arguments_before_the_engines_see_them():
    wb = FakeSession()
    with pytest.raises(ValueError, match="ranks must be between 1 and the cluster's 2 engines"):
        bench.run_on_workbench(wb, "allreduce", ["c"], "8", ranks=3)
    with pytest.raises(ValueError):
        bench.run_on_workbench(wb, "allreduce", ["c"], "8", collective_mode="nope")
    assert wb.sweeps == []


SPEC = SpeedupSpec("inner", nranks=[1, 2], sizes=[4096], variants=["c"], repeats=2, params={"loops": 3})


def test_a_speedup_experiment_is_the_plan_s_loop_blocking_or_in_the_background():
    wb, seen = FakeSession(), []
    result = speedup.run_on_workbench(wb, SPEC, on_point=lambda r, p, i, total: seen.append((i, total)))
    again = asyncio.run(speedup.run_async(FakeSession(), SPEC))
    assert [c[0] for c in wb.calls] == ["run_point", "run_point"]  # one engine call a point
    assert [p["nranks"] for p in result.points] == [p["nranks"] for p in again.points] == [1, 2]
    assert [p["speedup"] for p in result.points] == pytest.approx([1.0, 2.0])
    assert seen == [(1, 2), (2, 2)]
    stopped = speedup.run_on_workbench(FakeSession(), SPEC, should_stop=lambda: len(wb.calls) >= 1)
    assert stopped.points == []


def test_a_speedup_experiment_must_fit_the_cluster():
    wb = FakeSession()
    with pytest.raises(ValueError, match="the cluster has 2 engines"):
        speedup.run_on_workbench(wb, SpeedupSpec("inner", nranks=[1, 3], sizes=[4096], variants=["c"]))
    assert wb.calls == []


def test_panels_run_through_the_same_driver(monkeypatch):
    pytest.importorskip("ipywidgets")
    from mpiworkbench.widgets.bench import BenchPanel

    monkeypatch.setattr(BenchPanel, "redraw", lambda self: None)  # no figures here
    panel = BenchPanel(FakeSession(), "allreduce", backends=("c",), sizes="8,64")
    blocking = panel.run()

    async def click_run_and_wait():
        panel.run_button.click()  # Run: the same sweep as a background task
        assert panel.run_button.disabled
        return await panel._task

    background = asyncio.run(click_run_and_wait())
    assert blocking == background and panel.progress.value == panel.progress.max == 2
    assert "2 rows, thread level single" in panel.status.value and not panel.run_button.disabled


def test_the_workbench_gives_its_handles_their_panels(monkeypatch):
    pytest.importorskip("ipywidgets")
    from mpiworkbench import Workbench
    from mpiworkbench.widgets.cg import CGPanel
    from mpiworkbench.widgets.wave import WavePanel

    for handle in (WaveHandle, CGHandle):
        monkeypatch.setattr(handle, "reset", lambda self: None)  # nothing on engines here
    wb = Workbench(n=1)
    wave, cg = wb.wave(mesh=9), wb.cg(mesh=9, tol=1e-3)
    assert isinstance(wave, WaveHandle) and wave.panel is WavePanel and wave.options == {"mesh": 9}
    assert isinstance(cg, CGHandle) and cg.panel is CGPanel and cg.options == {"mesh": 9, "tol": 1e-3}
    with pytest.raises(RuntimeError, match="created without a panel"):
        WaveHandle(wb).widget()  # a client-only handle: the client never imports widgets


def test_a_wave_handle_plays_until_told_to_stop(monkeypatch):
    steps = []
    monkeypatch.setattr(WaveHandle, "reset", lambda self: None)
    monkeypatch.setattr(WaveHandle, "step", lambda self, k=1: steps.append(k) or {"steps": sum(steps)})
    handle, drawn = WaveHandle(FakeSession()), []
    report = handle.run(should_stop=lambda: len(steps) == 3, on_progress=drawn.append, chunk=5)
    assert steps == [5, 5, 5] and drawn == [handle] * 3 and report == {"steps": 15}
    assert handle.run(should_stop=lambda: True) is None


def test_drive_and_drive_async_send_each_result_back():
    def loop():
        total = 0
        for value in (1, 2, 3):
            total += (yield FakeResult([value, -value]))[0]
        return total

    assert drive(FakeSession(), loop()) == asyncio.run(drive_async(FakeSession(), loop())) == 6
