"""Micro-benchmarks on the engines: one sweep loop, waited on blocking or in the background.

:func:`start_run` creates a :class:`~mpiworkbench.bench.harness.BenchRun` on the engines;
:func:`sweep` is the one loop that steps it one size per engine call, handing each size's
rows to a callback, so a plot can grow while the sweep runs. :func:`run_on_workbench`
(code, notebooks) waits for it blocking; :func:`run_async` (the bench panel's **Run**)
without blocking the kernel. Both stop early when asked, keeping the sizes done.
"""

from __future__ import annotations

from typing import Any, Callable

from mpiworkbench.backends import implemented_names
from mpiworkbench.bench.method import Policy, parse_sizes
from mpiworkbench.client.waiting import Steps, drive, drive_async

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

    A generator of :data:`~mpiworkbench.client.waiting.Steps`, waited on by
    :func:`~mpiworkbench.client.waiting.drive` or :func:`~mpiworkbench.client.waiting.drive_async`.
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

