"""The user-facing :class:`Workbench`: a client session plus its panels, one call away.

The client (:mod:`mpiworkbench.client`) runs things on the engines and never imports a
widget; the widgets (:mod:`mpiworkbench.widgets`) only call the client. This module is
where the two meet: :meth:`Workbench.wave`, :meth:`Workbench.cg` and :meth:`Workbench.heat` return client handles
given their panel class (``.widget()`` builds it), :meth:`Workbench.bench` and
:meth:`Workbench.speedup` return panels that run through the client's drivers.
"""

from __future__ import annotations

from typing import Any

from mpiworkbench.client.calls.session import Session
from mpiworkbench.client.calls.trace import tracing
from mpiworkbench.drivers.cg import CGHandle
from mpiworkbench.drivers.heat import HeatHandle
from mpiworkbench.drivers.wave import WaveHandle
from mpiworkbench.trace.recorder import DEFAULT_CAPACITY

__all__ = ["Workbench"]


class Workbench(Session):
    """An ipyparallel cluster whose engines are the ranks of one MPI world, with its panels.

    Everything of :class:`~mpiworkbench.client.calls.session.Session` (start, stop, restart,
    ``run``, ``%%px`` with a timeout, remote objects), plus the control panel and the
    live solvers, benchmarks and speedup experiments.

    Examples
    --------
    >>> wb = Workbench(n=2).start()          # doctest: +SKIP
    >>> wb.panel()                           # doctest: +SKIP
    >>> w = wb.wave(mesh=65); w.step(10); w.widget()  # doctest: +SKIP
    """

    def panel(self):
        """The control panel: engines ↔ ranks, versions, state; attach, start, restart, stop.

        Returns
        -------
        ipywidgets.VBox
            The panel's widget, ready to display.
        """
        from mpiworkbench.widgets.control import ControlPanel  # lazy: the control panel imports ipywidgets; a Workbench used from a script never shows it

        return ControlPanel(self).widget

    def wave(self, **kwargs: Any) -> WaveHandle:
        """A live 3-D wave solver on the engines.

        Parameters
        ----------
        **kwargs
            Options of :class:`~mpiworkbench.solvers.wave.solver.WaveSolver` (``mesh``,
            ``kernel``, …).

        Returns
        -------
        WaveHandle
            Step it (``.step(k)``), inspect it (``.slice()``, ``.error()``), show its panel
            (``.widget()``).
        """
        from mpiworkbench.widgets.wave import WavePanel  # lazy: the panel imports matplotlib; a Workbench that makes no panel never pays for it

        return WaveHandle(self, panel=WavePanel, **kwargs)

    def cg(self, **kwargs: Any) -> CGHandle:
        """A live CG solver on the engines.

        Parameters
        ----------
        **kwargs
            Options of :class:`~mpiworkbench.solvers.cg.solver.CGSolver` (``mesh``, ``tol``, …).

        Returns
        -------
        CGHandle
            Iterate it (``.iterate(k)``), follow ``.residuals``, show its panel (``.widget()``).
        """
        from mpiworkbench.widgets.cg import CGPanel  # lazy: the panel imports matplotlib; a Workbench that makes no panel never pays for it

        return CGHandle(self, panel=CGPanel, **kwargs)

    def heat(self, **kwargs: Any) -> HeatHandle:
        """A live 2-D heat-diffusion solver on the engines (report 003's cylinder, notebook 06).

        Parameters
        ----------
        **kwargs
            Options of :class:`~mpiworkbench.solvers.heat.HeatSolver` (``shape``, ``exchange``,
            ``alpha``, ``tol``, …).

        Returns
        -------
        HeatHandle
            Step it (``.step(k)``), follow ``.deltas`` and ``.errors``, show its panel (``.widget()``).
        """
        from mpiworkbench.widgets.heat import HeatPanel  # lazy: the panel imports matplotlib; a Workbench that makes no panel never pays for it

        return HeatHandle(self, panel=HeatPanel, **kwargs)

    def speedup(self, experiment: str = "inner"):
        """The speedup-experiment panel on this cluster.

        Parameters
        ----------
        experiment : str
            A name of :func:`mpiworkbench.speedup.experiments.names` (the panel can switch).

        Returns
        -------
        SpeedupPanel
            Display its ``.widget``; its runs go through :mod:`mpiworkbench.drivers.speedup`.

        Raises
        ------
        ValueError
            Naming the experiment and the choices when it is unknown.
        """
        from mpiworkbench.speedup import experiments  # lazy: the experiment registry imports the solvers' and benchmarks' registries; only the panel needs it
        from mpiworkbench.widgets.speedup import SpeedupPanel  # lazy: the panel imports matplotlib; a Workbench that makes no panel never pays for it

        experiments.get(experiment)  # a clear error before any widget is built
        return SpeedupPanel(self, experiment=experiment)

    def bench(self, benchmark: str = "pingpong", **kwargs: Any):
        """The micro-benchmark panel on this cluster.

        Parameters
        ----------
        benchmark : str
            A name of :data:`mpiworkbench.bench.catalog.BENCHMARKS` (the panel can switch).
        **kwargs
            ``backends``, ``sizes``, ``width`` of the panel.

        Returns
        -------
        BenchPanel
            Display its ``.widget``; its runs go through :mod:`mpiworkbench.drivers.bench`.

        Raises
        ------
        ValueError
            Naming the benchmark and the choices when it is unknown.
        """
        from mpiworkbench.bench.catalog import get_benchmark  # lazy: the benchmark catalog imports the backends' registry; only the panel needs it
        from mpiworkbench.widgets.bench import BenchPanel  # lazy: the panel imports matplotlib; a Workbench that makes no panel never pays for it

        get_benchmark(benchmark)  # a clear error before any widget is built
        return BenchPanel(self, benchmark=benchmark, **kwargs)

    def export_job(self, path, values=None, minutes: int | None = None, name: str | None = None,
                   overwrite: bool = False):
        """Save this session's MPI work as a batch job that reproduces it (docs/batch_job.md).

        The ``%%px`` cells and ``wb.run`` calls that ran on this world (since its last restart)
        and succeeded, the solvers' and benchmarks' driver calls, in the order they ran, go to
        ``path/job.py``; ``run.sh`` runs it here, ``job.sbatch`` under Slurm, ``mpiworkbench job
        run PATH --np N`` at any size and compares each cell's output with what the session's
        ranks printed (a digest per cell and rank, in ``job.json``).

        Parameters
        ----------
        path : str or path
            A new directory (or a job's, with *overwrite*).
        values : list of str, or dict
            Values runs are compared by: variables the cells leave on the ranks (rank 0's), or
            ``{label: name or solver handle}`` (a handle of :meth:`wave`, :meth:`cg`,
            :meth:`heat`: its whole field, gathered).
        minutes : int, optional
            ``job.sbatch``'s time limit.
        name : str, optional
            The job's name (default the directory's).

        Returns
        -------
        SavedJob
            The directory, and how many calls it holds and which it left out.
        """
        from mpiworkbench.drivers.job import export_job  # lazy: only a session that saves a job needs it

        return export_job(self, path, values=values, minutes=minutes, name=name, overwrite=overwrite)

    #: The trace of the last ``%%px --trace`` cell (a :class:`mpiworkbench.trace.Trace`).
    last_trace = None

    def trace(self, capacity: int | None = None, lines: bool = True):
        """Record every rank's MPI calls inside a ``with`` block: ``with wb.trace() as t: …``.

        At the end the events are gathered to rank 0 by MPI and pulled once: ``t.trace`` is a
        :class:`mpiworkbench.trace.Trace` (timeline, messages, matrix, Chrome JSON). If the block
        times out, ``t.trace`` holds what each rank recorded up to the timeout.

        Parameters
        ----------
        capacity : int, optional
            Events each rank can hold (56 bytes each); further calls are counted as dropped.
        lines : bool
            Also record the Python line of every call into MPI, which the wait states and the
            hang report name; it makes traced Python code slower (docs/tracing.md): switch it
            off to time a traced run.

        Examples
        --------
        >>> with wb.trace() as t:                  # doctest: +SKIP
        ...     wb.run(lambda: __import__("mpi4py.MPI").MPI.COMM_WORLD.barrier())
        >>> mpiworkbench.plot.trace.timeline(t.trace)  # doctest: +SKIP
        """
        return tracing(self, DEFAULT_CAPACITY if capacity is None else capacity, lines=lines)
