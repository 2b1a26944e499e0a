"""Micro-benchmarks on the engines: one sweep loop, waited on blocking or in the background.

:func:`start_run` creates a :class:`~mpiworkbench.bench.harness.BenchRun` on the engines;
:func:`sweep` is the one loop that steps it one size per engine call, handing each size's
rows to a callback, so a plot can grow while the sweep runs. :func:`run_on_workbench`
(code, notebooks) waits for it blocking; :func:`run_async` (the bench panel's **Run**)
without blocking the kernel. Both stop early when asked, keeping the sizes done.

:func:`run_under` / :func:`run_under_async` run the same sweep under *another* MPI
implementation on this host, as ``mpiworkbench bench … --mpi NAME`` (the command itself, in a
process of its own: the engines are one implementation's ranks) — what the bench panel's
**Also under** adds beside the engines' run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.backends import implemented_names
from mpiworkbench.bench.method import Policy, parse_sizes
from mpiworkbench.client.cluster import cli_job
from mpiworkbench.client.calls.waiting import Steps, drive, drive_async
from mpiworkbench.core import implementations

#: Backends a sweep runs on unless told otherwise (the registry's order, C first).
DEFAULT_BACKENDS = tuple(implemented_names())
FACTORY = "mpiworkbench.bench.harness:BenchRun"

OnRows = Callable[[list[dict], dict], None]


def start_run(wb, benchmark: str, backends=DEFAULT_BACKENDS, sizes: str | list[int] | None = None,
              ranks: int | None = None, **policy: Any):
    """Create the sweep on the engines (on the first *ranks* ranks).

    Parameters
    ----------
    wb
        A running session.
    benchmark : str
        A name of :data:`mpiworkbench.bench.catalog.BENCHMARKS`.
    backends : sequence of str
        Backend names of :mod:`mpiworkbench.backends` (``api:<name>`` too).
    sizes : str or list of int, optional
        Message sizes in bytes, or a range like ``"8:1M"``; the default sweep when ``None``.
    ranks : int, optional
        Run on the first *ranks* engines only (all by default).
    **policy
        Fields of :class:`~mpiworkbench.bench.method.Policy` (checked here, before anything
        reaches the engines).

    Returns
    -------
    RemoteObject
        The sweep on the engines.
    """
    size_list = parse_sizes(sizes) if sizes is None or isinstance(sizes, str) else list(sizes)
    Policy(**policy)  # check here first: a clear error before anything reaches the engines
    if ranks is not None and not 1 <= ranks <= wb.n:
        raise ValueError(f"ranks must be between 1 and the cluster's {wb.n} engines; got {ranks}")
    return wb.create(FACTORY, benchmark, list(backends), size_list, policy,
                     nranks=None if ranks in (None, wb.n) else ranks)


def sweep(run, on_rows: OnRows | None = None, should_stop: Callable[[], bool] = lambda: False) -> Steps:
    """The one loop of a sweep: one size per engine call, then the results document.

    A generator of :data:`~mpiworkbench.client.calls.waiting.Steps`, waited on by
    :func:`~mpiworkbench.client.calls.waiting.drive` or :func:`~mpiworkbench.client.calls.waiting.drive_async`.
    The sweep is deleted on the engines when the loop ends, however it ends.

    Parameters
    ----------
    run : RemoteObject
        The sweep of :func:`start_run`.
    on_rows : callable, optional
        ``on_rows(rows, progress)`` after every size (rank 0's rows of that size; progress:
        ``{"done", "total"}``), so a plot can grow while the sweep runs.
    should_stop : callable, optional
        Asked before every size; the document then holds the sizes that finished
        (``complete`` is false).
    """
    try:
        total = len(run.attr("sizes")[0])
        for done in range(1, total + 1):
            if should_stop():
                break
            rows = (yield run.call_async("step"))[0]
            if on_rows is not None:
                on_rows(rows, {"done": done, "total": total})
        return run.root("summary")
    finally:
        run.delete()


def run_on_workbench(wb, benchmark: str, backends=DEFAULT_BACKENDS, sizes=None, ranks: int | None = None,
                     on_rows: OnRows | None = None, should_stop: Callable[[], bool] = lambda: False,
                     **policy: Any) -> dict:
    """Run a whole sweep on the engines, size by size, blocking.

    Parameters
    ----------
    wb, benchmark, backends, sizes, ranks, **policy
        As :func:`start_run`.
    on_rows, should_stop
        As :func:`sweep`.

    Returns
    -------
    dict
        The results document, what ``mpiworkbench bench --json`` writes (see
        :mod:`mpiworkbench.bench.results`).
    """
    run = start_run(wb, benchmark, backends, sizes, ranks, **policy)
    return drive(wb, sweep(run, on_rows, should_stop))


async def run_async(wb, benchmark: str, backends=DEFAULT_BACKENDS, sizes=None, ranks: int | None = None,
                    on_rows: OnRows | None = None, should_stop: Callable[[], bool] = lambda: False,
                    **policy: Any) -> dict:
    """:func:`run_on_workbench` without blocking the kernel (widgets stay live meanwhile).

    A coroutine with the same parameters and result; the bench panel's **Run** awaits it.
    """
    run = start_run(wb, benchmark, backends, sizes, ranks, **policy)
    return await drive_async(wb, sweep(run, on_rows, should_stop))



#: :class:`~mpiworkbench.bench.method.Policy` field → the ``bench`` command's option.
_POLICY_OPTIONS = {"collective_mode": "--mode", "time_cap_s": "--time-cap", "repeats": "--repeat",
                   "iterations": "--iterations", "warmup": "--warmup", "window": "--window"}


def command_line(mpi: str, benchmark: str, backends=DEFAULT_BACKENDS, sizes=None, ranks: int = 2,
                 thread_level: str | None = None, json_path: str | Path = "-", **policy: Any) -> list[str]:
    """``mpiworkbench bench …`` running this sweep on *ranks* ranks under MPI implementation *mpi*."""
    implementations.get(mpi).require()
    Policy(**policy)  # a clear error before any job starts
    argv = [sys.executable, "-m", "mpiworkbench", "bench", benchmark, "--np", str(ranks), "--mpi", mpi,
            "--backend", ",".join(backends), "--json", str(json_path), "--quiet"]
    if sizes is not None:
        argv += ["--sizes", sizes if isinstance(sizes, str) else ",".join(map(str, sizes))]
    if thread_level is not None:
        argv += ["--thread-level", thread_level]
    for field, value in policy.items():
        if value is not None:
            argv += [_POLICY_OPTIONS[field], str(value)]
    return argv


def _reader(mpi: str):
    """Reads the document a ``bench`` job wrote (partial when it failed after some sizes)."""
    def read(path: Path, code: int, stderr: str) -> dict:
        doc = json.loads(path.read_text()) if path.exists() and path.stat().st_size else None
        if code != 0 and not (doc and doc["rows"]):
            raise cli_job.failure(f"the {mpi} run of the benchmark", code, stderr)
        return doc
    return read


def run_under(mpi: str, benchmark: str, backends=DEFAULT_BACKENDS, sizes=None, ranks: int = 2,
              thread_level: str | None = None, **policy: Any) -> dict:
    """The sweep of :func:`run_on_workbench` on *ranks* ranks of this host under MPI
    implementation *mpi*, blocking: ``mpiworkbench bench … --mpi MPI``'s results document
    (partial when the job failed after some sizes; a ``RuntimeError`` when it wrote none)."""
    return cli_job.run(lambda path: command_line(mpi, benchmark, backends, sizes, ranks, thread_level, path, **policy),
                       _reader(mpi))


async def run_under_async(mpi: str, benchmark: str, backends=DEFAULT_BACKENDS, sizes=None, ranks: int = 2,
                          thread_level: str | None = None, **policy: Any) -> dict:
    """:func:`run_under` without blocking the kernel."""
    return await cli_job.run_async(
        lambda path: command_line(mpi, benchmark, backends, sizes, ranks, thread_level, path, **policy), _reader(mpi))
