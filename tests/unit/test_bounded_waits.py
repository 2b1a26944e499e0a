"""Background waits (a panel's Run, a live panel's frame) are bounded like ``%%px``: past
``wb.timeout``, or ``failure_grace`` after a rank failed while others still run, they raise
the workbench's rank-by-rank report, and the panels show it. No cluster: an engine call is
a set of futures that this test settles (or leaves running)."""

from __future__ import annotations

import asyncio
import concurrent.futures

import pytest

from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus
from mpiworkbench.client.calls.waiting import drive_async, wait_ranks


class Pending:
    """An engine call on engines 0 and 1 whose parts are ordinary futures."""

    def __init__(self, *parts: concurrent.futures.Future):
        self.parts, self._targets = list(parts), [0, 1]

    def ready(self) -> bool:
        return all(p.done() for p in self.parts)

    def split(self):
        return self.parts


def running() -> concurrent.futures.Future:
    return concurrent.futures.Future()  # never settled: a rank blocked in MPI


def failed() -> concurrent.futures.Future:
    f = concurrent.futures.Future()
    f.set_exception(ZeroDivisionError("division by zero"))
    return f


class Session:
    ranks = {0: 0, 1: 1}
    failure_grace = 0.2

    def __init__(self, timeout):
        self.timeout = timeout

    def wait_explained(self, ar, timeout, raise_failures=True, started=None, grace=None):  # Session's, less the hang report
        grace = self.failure_grace if grace is None else grace
        return wait_ranks(ar, self.ranks, timeout, grace=grace, raise_failures=raise_failures, started=started)

    def gather(self, ar):  # what Session.gather does
        self.wait_explained(ar, self.timeout)
        return [p.result() for p in ar.split()]


def one_call(pending):
    yield pending
    return "never reached"


def test_a_background_wait_ends_at_the_timeout_with_the_rank_report():
    with pytest.raises(ExecutionTimeout) as caught:
        asyncio.run(drive_async(Session(timeout=0.3), one_call(Pending(running(), running()))))
    report = str(caught.value)
    assert "rank 0 (engine 0): still running" in report and "rank 1 (engine 1): still running" in report
    assert "timeout 0.3 s" in report and "wb.restart()" in report


def test_a_failed_rank_ends_the_wait_after_the_grace_not_the_timeout():
    # timeout=None: only the failure can end this wait (a hang here is this test failing)
    with pytest.raises(ExecutionTimeout) as caught:
        asyncio.run(drive_async(Session(timeout=None), one_call(Pending(failed(), running()))))
    assert caught.value.failed == [0] and caught.value.running == [1]
    assert "blocked in a collective" in str(caught.value)


def test_every_rank_failing_is_a_rank_failure():
    with pytest.raises(RankFailure, match="rank 1 \\(engine 1\\): failed with ZeroDivisionError"):
        asyncio.run(drive_async(Session(timeout=None), one_call(Pending(failed(), failed()))))


def test_the_bench_panel_shows_the_hang_report(monkeypatch):
    pytest.importorskip("ipywidgets")
    from mpiworkbench.drivers import bench as driver
    from mpiworkbench.widgets.bench import BenchPanel

    class Sweep:
        def attr(self, name):
            return [[8, 64]] * 2

        def call_async(self, method):
            return Pending(running(), running())

        def delete(self):
            self.deleted = True

    sweep = Sweep()
    monkeypatch.setattr(driver, "start_run", lambda *a, **k: sweep)
    session = Session(timeout=0.2)
    session.n, session.thread_level = 2, "single"
    panel = BenchPanel(session, "allreduce", backends=("c",), sizes="8,64")
    asyncio.run(panel.run_async())
    assert "ExecutionTimeout" in panel.status.value and "mpiwb-rank-report" in panel.status.value
    assert "rank 1 (engine 1): still running" in panel.status.value
    assert sweep.deleted and not panel.run_button.disabled and panel.stop_button.disabled


def test_a_live_panel_shows_the_report_of_a_frame_that_hung():
    pytest.importorskip("ipywidgets")
    from mpiworkbench.widgets.live import SteppingPanel

    class Hung(SteppingPanel):
        """A live panel whose frame waited ``wb.timeout`` (the handle's ``wb.gather`` raised)."""

        def __init__(self):
            import ipywidgets as w

            super().__init__(handle=None)
            self.status = w.HTML()

        def _submit(self, k):
            return "a frame on its way"

        def _finish(self, started):
            raise ExecutionTimeout([RankStatus(0, 0, "ok"), RankStatus(1, 1, "running")],
                                   detail="(waited 1.0 s, timeout 1.0 s)")

        def _draw_timings(self):
            pass

    panel = Hung()
    assert panel.request_steps(10)
    panel.wait(timeout=60)
    assert "step failed" in panel.status.value and "rank 1 (engine 1): still running" in panel.status.value
    assert not any(b.disabled for b in panel.buttons.values())  # usable again
    panel.play.value = True  # Play: the first frame fails the same way and Play ends
    panel.wait(timeout=60)
    assert panel.play.value is False and "still running" in panel.status.value
