"""Speedup experiments on the engines: the experiment's one loop, blocking or in the background.

Every point runs :func:`~mpiworkbench.speedup.point.run_point` on the engines of a running
session (rank counts below the cluster size on sub-communicators, no restart). The loop
itself is :func:`mpiworkbench.speedup.plan.run_steps`, the one the CLI runs too: here it is
only handed the engines. :func:`run_on_workbench` waits for each point blocking;
:func:`run_async` (the speedup panel's **Run**) without blocking the kernel, and stops
after the point in progress when asked, keeping the points done.
"""

from __future__ import annotations

from typing import Any, Callable

from mpiworkbench.client.waiting import Steps, drive, drive_async
from mpiworkbench.speedup.analysis import SpeedupResult
from mpiworkbench.speedup.plan import SpeedupSpec, run_steps

__all__ = ["OnPoint", "check_ranks", "on_engines", "run_async", "run_on_workbench"]

OnPoint = Callable[[SpeedupResult, dict[str, Any], int, int], None]


def check_ranks(wb, spec: SpeedupSpec) -> None:
    """The rank counts of *spec* must fit the cluster's engines (sub-communicators, no restart)."""
    if max(spec.nranks) > wb.n:
        raise ValueError(
            f"rank counts go up to {max(spec.nranks)} but the cluster has {wb.n} engines; "
            f"use counts from 1 to {wb.n} or start Workbench(n={max(spec.nranks)})"
        )
    bound = spec.world_bound()
    below = [n for n in spec.nranks if n != wb.n]
    if bound and below:
        raise ValueError(
            f"{', '.join(bound)} talks only on MPI_COMM_WORLD, so on this {wb.n}-engine cluster it can be "
            f"measured at {wb.n} rank(s) only, not {below}: drop those counts, or run "
            f"`mpiworkbench speedup {spec.experiment} --np {','.join(map(str, spec.nranks))} --backend "
            f"{','.join(spec.backends or ())}` (one world per rank count)"
        )


def on_engines(wb, spec: SpeedupSpec, on_point: OnPoint | None = None, label: str = "",
               should_stop: Callable[[], bool] = lambda: False) -> Steps:
    """:func:`~mpiworkbench.speedup.plan.run_steps` with every point submitted to the engines.

    A generator of :data:`~mpiworkbench.client.waiting.Steps` (each point's
    :func:`~mpiworkbench.speedup.point.run_point` call on every rank; rank 0's record is sent
    on to the plan's loop). Arguments as :func:`run_on_workbench`.

    Raises
    ------
    ValueError
        When the rank counts exceed the cluster's engines (see :func:`check_ranks`).
    """
    from mpiworkbench.speedup.point import run_point

    check_ranks(wb, spec)
    steps = run_steps(spec, on_point, label, should_stop)
    try:
        point = next(steps)
        while True:
            records = yield wb.run_async(run_point, point)
            point = steps.send(records[0])
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


def run_on_workbench(wb, spec: SpeedupSpec, on_point: OnPoint | None = None, label: str = "",
                     should_stop: Callable[[], bool] = lambda: False) -> SpeedupResult:
    """Run *spec* on the engines of *wb*, one point at a time, blocking.

    Parameters
    ----------
    wb
        A running session.
    spec : SpeedupSpec
        The experiment, sizes, rank counts, variants and repetitions.
    on_point : callable, optional
        ``on_point(result, point, i, total)`` after every point (a plot can grow).
    label : str
        The result's label (legends, saved files).
    should_stop : callable, optional
        Asked before every point; the result then holds the points done.

    Returns
    -------
    SpeedupResult
    """
    return drive(wb, on_engines(wb, spec, on_point, label, should_stop))


async def run_async(wb, spec: SpeedupSpec, on_point: OnPoint | None = None, label: str = "",
                    should_stop: Callable[[], bool] = lambda: False) -> SpeedupResult:
    """:func:`run_on_workbench` without blocking the kernel (widgets stay live meanwhile).

    A coroutine with the same parameters and result; the speedup panel's **Run** awaits it.
    """
    return await drive_async(wb, on_engines(wb, spec, on_point, label, should_stop))
