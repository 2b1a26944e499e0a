"""Speedup experiments on the engines: the experiment's one loop, blocking or in the background.

Every point runs :func:`~mpiworkbench.speedup.point.run_point` on the engines of a running
session (rank counts below the cluster size on sub-communicators, no restart). The loop
itself is :func:`mpiworkbench.speedup.plan.run_steps`, the one the CLI runs too: here it is
only handed the engines. :func:`run_on_workbench` waits for each point blocking;
:func:`run_async` (the speedup panel's **Run**) without blocking the kernel, and stops
after the point in progress when asked, keeping the points done.

:func:`run_under_async` runs the same experiment under *another* MPI implementation on this host,
as ``mpiworkbench speedup … --mpi NAME`` (the command itself, in a process of its own: the
engines are one implementation's ranks) — what the speedup panel's **Also under** adds.

``SpeedupSpec(trace=True)`` traces every point (on the engines, or ``--trace`` of the command):
the result then holds each point's POP factors (:mod:`mpiworkbench.speedup.factors`) and, for a
run on the engines, each point's Trace (``result.traces``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.client.cluster import cli_job
from mpiworkbench.client.calls.waiting import Steps, drive, drive_async
from mpiworkbench.core import implementations
from mpiworkbench.speedup import analysis, experiments
from mpiworkbench.speedup.analysis import SpeedupResult
from mpiworkbench.speedup.plan import SpeedupSpec, run_steps
from mpiworkbench.speedup.point import run_point

__all__ = ["OnPoint", "check_ranks", "command_line", "on_engines", "run_async", "run_on_workbench",
           "run_under", "run_under_async"]

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

    A generator of :data:`~mpiworkbench.client.calls.waiting.Steps` (each point's
    :func:`~mpiworkbench.speedup.point.run_point` call on every rank; rank 0's record is sent
    on to the plan's loop). Arguments as :func:`run_on_workbench`.

    Raises
    ------
    ValueError
        When the rank counts exceed the cluster's engines (see :func:`check_ranks`).
    """
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


def command_line(mpi: str, spec: SpeedupSpec, json_path: str | Path) -> list[str]:
    """``mpiworkbench speedup …`` measuring *spec* (as the panel's controls describe it, not yet
    :meth:`~mpiworkbench.speedup.plan.SpeedupSpec.resolved`) under MPI implementation *mpi*."""
    implementations.get(mpi).require()
    exp = experiments.get(spec.experiment)
    argv = [sys.executable, "-m", "mpiworkbench", "speedup", exp.name, "--np", ",".join(map(str, spec.nranks)),
            "--repeats", str(spec.repeats), "--warmup", str(spec.warmup), "--scaling", spec.scaling,
            "--mpi", mpi, "--json", str(json_path)]
    for option, values in ((f"--{exp.size_name}", spec.sizes), ("--variants", spec.variants),
                           ("--backend", spec.backends), ("--place", spec.placements)):
        if values:
            argv += [option, ",".join(map(str, values))]
    for name, value in spec.params.items():
        argv += [f"--{name}", str(value)]
    if spec.trace:
        argv.append("--trace")
    return argv


def _reader(mpi: str, label: str):
    """Reads the result a ``speedup`` job wrote (partial when it failed after some points)."""
    def read(path: Path, code: int, stderr: str) -> SpeedupResult:
        result = analysis.load(path) if path.exists() and path.stat().st_size else None
        if result is None or not result.points:
            raise cli_job.failure(f"the {mpi} run of the experiment", code, stderr)
        result.label = label or f"{mpi} (this host)"
        return result
    return read


def run_under(mpi: str, spec: SpeedupSpec, label: str = "") -> SpeedupResult:
    """*spec* on this host under MPI implementation *mpi* (``speedup … --mpi MPI``), blocking:
    the command's result (partial when its job failed after some points; a ``RuntimeError``
    when it measured none)."""
    return cli_job.run(lambda path: command_line(mpi, spec, path), _reader(mpi, label))


async def run_under_async(mpi: str, spec: SpeedupSpec, label: str = "") -> SpeedupResult:
    """:func:`run_under` without blocking the kernel."""
    return await cli_job.run_async(lambda path: command_line(mpi, spec, path), _reader(mpi, label))
