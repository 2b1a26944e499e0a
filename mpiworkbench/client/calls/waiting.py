"""Waiting on a multi-engine execution without hanging on a failed collective.

One rank raising before a barrier leaves the others blocked forever (ipyparallel issue
#435). :func:`wait_ranks` waits until every rank finishes, or until the first rank fails
and the rest had a short grace period to follow, or until the timeout; then it says
rank by rank what happened.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any, Generator, Mapping

from mpiworkbench.client import upstream
from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus

#: A feature's one loop, written once for both ways of waiting (see :func:`drive`): it
#: yields each pending engine call and is sent back that call's results in rank order;
#: what it returns is the feature's result.
Steps = Generator[Any, list, Any]


def drive(wb, steps: Steps) -> Any:
    """Run *steps* to the end, blocking: every pending call is waited for with *wb*'s hang
    protection (``wb.gather``) and its results are sent back; returns what *steps* returns."""
    try:
        pending = next(steps)
        while True:
            pending = steps.send(wb.gather(pending))
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


async def drive_async(wb, steps: Steps) -> Any:
    """Like :func:`drive`, but waits without blocking the kernel's event loop, so widgets
    (a Stop button) stay live while the engines work; the panels' background runs use it.

    Bounded like ``%%px``: a call still running after ``wb.timeout``, or whose other ranks
    are still running ``wb.failure_grace`` after one failed, raises the rank-by-rank
    :class:`~mpiworkbench.client.errors.ExecutionTimeout`.
    """
    try:
        pending = next(steps)
        while True:
            started = time.monotonic()
            timeout, grace = wb.timeout, getattr(wb, "failure_grace", 2.0)
            if not await until_ready(pending, timeout, grace):
                wb.wait_explained(pending, timeout, started=started, grace=0.0)  # raises the hang report
            pending = steps.send(wb.gather(pending))
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


def _any_failed(ar) -> bool:
    split = getattr(ar, "split", None)
    return split is not None and any(p.done() and p.exception() is not None for p in split())


async def until_ready(ar, timeout: float | None = None, grace: float = 2.0, poll_s: float = 0.05) -> bool:
    """Wait for *ar* (an ipyparallel ``AsyncResult``, or a :class:`~mpiworkbench.client.calls.call.Call`
    around one) without blocking the kernel's event loop, so widgets (a Stop button) stay live
    while the engines work; the panels' background runs use it.

    Returns whether *ar* is ready: false once *timeout* seconds passed (``None``: never),
    or *grace* seconds after a rank failed while others still run (blocked in a
    collective, most likely).
    """
    ar = getattr(ar, "ar", ar)
    start = time.monotonic()
    failed_at = None
    while not ar.ready():
        now = time.monotonic()
        if timeout is not None and now - start >= timeout:
            return False
        if failed_at is None and _any_failed(ar):
            failed_at = now
        if failed_at is not None and now - failed_at >= grace:
            return False
        await asyncio.sleep(poll_s)
    return True




def _error_status(rank: int, engine_id: int, exc: BaseException) -> RankStatus:
    ename = getattr(exc, "ename", type(exc).__name__)
    evalue = getattr(exc, "evalue", str(exc))
    traceback = getattr(exc, "traceback", None)
    lines = traceback.splitlines() if isinstance(traceback, str) else []
    return RankStatus(rank, engine_id, "failed", f"{ename}: {evalue}", lines)


def rank_statuses(ar, rank_of: Mapping[int, int]) -> list[RankStatus]:
    """The state of each rank's part of *ar* right now."""
    statuses = []
    for engine_id, part in zip(upstream.targets(ar), ar.split()):
        rank = rank_of.get(engine_id, engine_id)
        if not part.done():
            statuses.append(RankStatus(rank, engine_id, "running"))
        elif part.exception() is not None:
            statuses.append(_error_status(rank, engine_id, part.exception()))
        else:
            statuses.append(RankStatus(rank, engine_id, "ok"))
    return statuses


def wait_ranks(
    ar,
    rank_of: Mapping[int, int],
    timeout: float | None,
    grace: float = 2.0,
    raise_failures: bool = True,
    started: float | None = None,
) -> list[RankStatus]:
    """Wait for *ar*; raise :class:`ExecutionTimeout` if ranks are still running at the end.

    Parameters
    ----------
    ar : ipyparallel.AsyncResult
        An execution on a list of engines.
    rank_of : mapping
        Engine id → MPI rank, for the report.
    timeout : float or None
        Seconds to wait for all ranks (``None``: forever).
    grace : float
        Once a rank has failed, how long the others may still take before they are
        reported as blocked.
    raise_failures : bool
        Raise :class:`RankFailure` when every rank finished but some failed.
    started : float, optional
        ``time.monotonic()`` when the wait began, if it began earlier (a background wait
        finishing here): the timeout counts from then.
    """
    start = time.monotonic() if started is None else started
    parts = ar.split()
    first_wait = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
    done, pending = concurrent.futures.wait(
        parts, timeout=first_wait, return_when=concurrent.futures.FIRST_EXCEPTION
    )
    if pending and any(p.exception() is not None for p in done):
        remaining = None if timeout is None else max(0.0, timeout - (time.monotonic() - start))
        window = grace if remaining is None else min(grace, remaining)
        concurrent.futures.wait(pending, timeout=window)
    statuses = rank_statuses(ar, rank_of)
    elapsed = time.monotonic() - start
    if any(s.state == "running" for s in statuses):
        raise ExecutionTimeout(statuses, detail=f"(waited {elapsed:.1f} s, timeout {timeout} s)")
    if raise_failures and any(s.state == "failed" for s in statuses):
        raise RankFailure(statuses)
    return statuses
