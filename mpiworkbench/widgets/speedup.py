"""The speedup panel: pick an experiment, sizes, rank counts, variants and repetitions; Run.

Every point runs on the engines of a running :class:`~mpiworkbench.Workbench` through
the driver of :mod:`mpiworkbench.drivers.speedup` (rank counts below the cluster size on
sub-communicators, no restart), and appears on the runtime/speedup/efficiency figure and
the table as soon as it is done. Results save to JSON and reload for comparison. The callbacks only call the
methods below; they call that driver and ordinary functions of :mod:`mpiworkbench.speedup`
and :mod:`mpiworkbench.plot`.

Control ``description``s (stable, for tests and documentation):
``Experiment``, ``Sizes``, ``Ranks``, ``Variants``, ``Backends`` (wave, cg, heat: cross the
variants with communication backends, thesis Figs. 6.2-6.5; the figure then shows the ratio
to C), ``Repetitions``, ``Scaling``, one per
experiment parameter named as the parameter (``loops``, ``steps``, ``tol``,
``iterations``, ``backend``), ``Placement`` (which ranks a point of fewer ranks takes:
``packed`` fills one node first, ``spread`` goes across the nodes; both: intra- against
inter-node curves), ``Also under`` (after the engines' run, the same experiment on this host
under each other MPI implementation chosen: the ``speedup … --mpi NAME`` command itself,
:func:`mpiworkbench.drivers.speedup.run_under`, drawn beside it as a comparison), ``Run``,
``Trace each point`` (every point's work run once more with the MPI interposer recording:
the figure gains the POP factor bars beside the curves and the panel a table of them — why the
efficiency drops; the traces are in ``panel.result.traces``),
``Stop``, ``Progress``, ``JSON file``, ``Save``, ``Load``, ``Clear comparison``. **Run** works in the background (the kernel stays free), **Stop** ends the
experiment after the point in progress and keeps the points done.

MPI implementation: the engines run under one (``Workbench(n=2, mpi="openmpi")``), so a run
is labelled with it (``this run (openmpi)``), every point names it (``mpi``) and a loaded
result with the implementations it holds; a result of several (``mpiworkbench speedup …
--mpi mpich,openmpi``) loads with a curve per implementation. To compare implementations
here, run on a cluster of each, save, and load.
"""

from __future__ import annotations

import asyncio
import html
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.drivers import speedup as driver
from mpiworkbench.core.machine import PLACEMENTS
from mpiworkbench.plot import render
from mpiworkbench.plot.speedup import backend_figure, scaling_figure
from mpiworkbench.speedup import analysis, experiments
from mpiworkbench.speedup.analysis import SpeedupResult
from mpiworkbench.speedup.factors import format_pop
from mpiworkbench.speedup.plan import SpeedupSpec, parse_int_list, plan_points, small_mode
from mpiworkbench.widgets import implementations
from mpiworkbench.widgets.file_bar import file_bar
from mpiworkbench.widgets.report import error_html


class SpeedupPanel:
    """ipywidgets panel over :mod:`mpiworkbench.drivers.speedup`; show it with ``display(panel.widget)``."""

    def __init__(self, wb, experiment: str = "inner", width: float = 12.0):
        import ipywidgets as w

        self.wb = wb
        self.width = width
        self.result: SpeedupResult | None = None
        self.compare: list[SpeedupResult] = []
        names = experiments.names()
        self.experiment = w.Dropdown(options=names, value=experiment, description="Experiment")
        self.sizes = w.Text(description="Sizes")
        self.ranks = w.Text(value=f"1-{wb.n}", description="Ranks")
        self.variants = w.SelectMultiple(description="Variants", rows=4)
        self.backends = w.SelectMultiple(description="Backends", rows=4)
        self.repeats = w.BoundedIntText(value=3 if small_mode() else 5, min=1, max=100, description="Repetitions")
        self.scaling = w.Dropdown(options=list(experiments.SCALINGS), value=experiments.SCALINGS[0], description="Scaling")
        hosts = sorted(set((getattr(wb, "hosts", None) or {}).values()))
        self.placement = w.SelectMultiple(
            options=list(PLACEMENTS), value=PLACEMENTS[:1], rows=len(PLACEMENTS), description="Placement",
            tooltip=("ranks of a point: packed fills one node first, spread goes across the nodes "
                     f"(this cluster: {len(hosts) or 'unknown number of'} host(s)"
                     + (", so both take the same ranks)" if len(hosts) == 1 else ")")))
        self.trace = w.Checkbox(value=False, description="Trace each point", indent=False,
                                tooltip="also trace one untimed run of every point: the POP factors "
                                        "(load balance, communication, scalability) beside the curves")
        self.also = implementations.selector(wb, "speedup")  # the same experiment under other implementations, here
        self.params_box = w.HBox()
        self.param_widgets: dict[str, Any] = {}
        self.run_button = w.Button(description="Run", button_style="primary", icon="play")
        self.stop_button = w.Button(description="Stop", icon="stop", disabled=True)
        self._stop = False
        self._task: asyncio.Task | None = None
        self.progress = w.IntProgress(value=0, min=0, max=1, description="Progress")
        self.status = w.HTML()
        self.figure = w.Image(format="png")
        self.table = w.HTML()
        self.file_bar = file_bar("speedup.json", lambda: self._guarded(lambda: self.save(self.path.value)),
                                 lambda: self._guarded(lambda: self.load(self.path.value)),
                                 lambda: self._guarded(self.clear_comparison),
                                 path_label="JSON file", clear_label="Clear comparison")
        self.path, self.save_button, self.load_button, self.clear_button = self.file_bar.children

        self.experiment.observe(lambda change: self.select_experiment(change["new"]), names="value")
        self.backends.observe(lambda change: self._variant_choices(), names="value")
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.select_experiment(experiment)
        self.widget = w.VBox(
            [
                w.HBox([self.experiment, self.scaling, self.repeats]),
                w.HBox([self.sizes, self.ranks]),
                w.HBox([self.variants, self.backends, self.placement, self.also, self.params_box]),
                w.HBox([self.run_button, self.stop_button, self.trace, self.progress, self.status]),
                self.figure,
                self.table,
                self.file_bar,
            ]
        )

    # -- the operations the buttons trigger ---------------------------------------------
    def select_experiment(self, name: str) -> None:
        """Fill sizes, variants and parameter controls with the experiment's defaults."""
        import ipywidgets as w

        exp = experiments.get(name)
        small = small_mode()
        self.sizes.value = ",".join(map(str, exp.sizes_for(small)))
        self.sizes.tooltip = exp.size_help
        self.backends.value = ()
        self.backends.options = list(exp.backends)
        self.backends.disabled = not exp.backends
        self._variant_choices()
        widgets = {}
        for p in exp.params:
            value = p.default_for(small)
            if p.choices:
                widgets[p.name] = w.Dropdown(options=list(p.choices), value=value, description=p.name)
            elif p.type is int:
                widgets[p.name] = w.IntText(value=value, description=p.name)
            elif p.type is float:
                widgets[p.name] = w.FloatText(value=value, description=p.name)
            else:
                widgets[p.name] = w.Text(value=str(value), description=p.name)
            widgets[p.name].tooltip = p.help
        self.param_widgets = widgets
        self.params_box.children = list(widgets.values())
        self.status.value = f"<i>{exp.title}. Timed: {exp.timed}.</i>"

    def _variant_choices(self) -> None:
        """The variants on offer: the experiment's, or (backends chosen) those crossed with them."""
        exp = experiments.get(self.experiment.value)
        crossed = bool(self.backends.value)
        options = list(exp.backend_variants if crossed else exp.variants)
        if list(self.variants.options) != options:
            self.variants.value = ()
            self.variants.options = options
            self.variants.value = tuple(exp.default_backend_variants if crossed else exp.default_variants)

    def spec(self) -> SpeedupSpec:
        """The :class:`SpeedupSpec` the controls describe (checked; raises ValueError)."""
        exp = experiments.get(self.experiment.value)
        return self._described().resolved()

    def _described(self) -> SpeedupSpec:
        """The spec as the controls say it (variants not yet crossed with the backends)."""
        exp = experiments.get(self.experiment.value)
        return SpeedupSpec(
            experiment=exp.name,
            nranks=parse_int_list(self.ranks.value, "Ranks"),
            sizes=parse_int_list(self.sizes.value, "Sizes"),
            variants=list(self.variants.value),
            repeats=int(self.repeats.value),
            scaling=self.scaling.value,
            params={name: widget.value for name, widget in self.param_widgets.items()},
            backends=list(self.backends.value) or None,
            placements=list(self.placement.value) or None,
            trace=bool(self.trace.value),
        )

    def run(self) -> SpeedupResult:
        """Run the experiment the controls describe, blocking, redrawing after every point."""
        spec = self._begin()
        try:
            self.result = driver.run_on_workbench(self.wb, spec, on_point=self._on_point, label=self._label())
            for mpi in implementations.in_turn(self):
                self.compare.append(driver.run_under(mpi, self._described()))
                self.redraw()
        finally:
            self._end(spec)
        return self.result

    def start(self) -> asyncio.Task:
        """What **Run** does: run in the background, so the kernel stays free and Stop works."""
        self.run_button.disabled = self.stop_button.disabled = True  # until the task takes over
        self.status.value = "starting…"
        self._task = asyncio.ensure_future(self.run_async())
        return self._task

    async def run_async(self) -> SpeedupResult | None:
        """Run point by point, waiting for each without blocking the kernel; errors go to the status."""
        spec = None
        try:
            spec = self._begin()
            self.result = await driver.run_async(self.wb, spec, on_point=self._on_point, label=self._label(),
                                                 should_stop=lambda: self._stop)
            for mpi in implementations.in_turn(self):
                self.compare.append(await driver.run_under_async(mpi, self._described()))
                self.redraw()
        except Exception as exc:  # noqa: BLE001 - shown in the panel, the kernel stays usable
            self._error(exc)
        finally:
            self._end(spec)
        return self.result

    def stop(self) -> None:
        """End the experiment after the point in progress; the points done stay."""
        self._stop = True
        self.status.value = "stopping after this point…"

    def save(self, path: str) -> None:
        """Save this run's result as JSON to *path* (**Save**)."""
        if self.result is None:
            raise ValueError("nothing to save yet: press Run first")
        analysis.save(self.result, path)
        self.status.value = f"saved to {path}"

    def load(self, path: str) -> SpeedupResult:
        """Load a saved result and overlay it on the plots for comparison."""
        loaded = analysis.load(path)
        mpis = ", ".join(dict.fromkeys(p["mpi"] for p in loaded.points if p.get("mpi")))
        loaded.label = Path(path).stem + (f" ({mpis})" if mpis else "")  # the file name tells the curves apart
        self.compare.append(loaded)
        self.redraw()
        self.status.value = f"loaded {path} ({loaded.experiment}, {len(loaded.points)} points) for comparison"
        return loaded

    def clear_comparison(self) -> None:
        """Forget the loaded results and redraw (**Clear comparison**)."""
        self.compare = []
        self.redraw()

    def redraw(self) -> None:
        """Draw the figure and the table again from this run and the loaded results."""
        results = ([self.result] if self.result is not None else []) + self.compare
        if not results:
            self.figure.value = b""
            self.table.value = ""
            return
        exp = experiments.get(results[0].experiment)
        if len(results) == 1 and analysis.ratio_rows(results[0]):  # backends crossed: the thesis's figure
            figure = backend_figure(results[0], exp.size_name, title=exp.title, width=self.width)
        else:
            figure = scaling_figure(results, exp.size_name, title=exp.title, width=self.width)
        self.figure.value = render.figure_to_png(figure)
        self.table.value = "".join(
            f"<b>{r.label or r.experiment}</b>{analysis.format_html(r, experiments.get(r.experiment).size_name)}"
            + _factors_html(r) for r in results
        )

    # -- plumbing --------------------------------------------------------------------------
    def _label(self) -> str:
        """This run's label: under which MPI implementation the engines run."""
        mpi = getattr(self.wb, "mpi", None)
        return f"this run ({mpi})" if mpi else "this run"

    def _on_point(self, result: SpeedupResult, point: dict[str, Any], i: int, total: int) -> None:
        self.result = result
        self.progress.value = i
        over = " — oversubscribed" if point.get("oversubscribed") else ""
        self.status.value = (
            f"{i}/{total}: {analysis.placed(point['variant'], point)} {analysis.where_text(point)}: "
            f"{point['median']:.4g} s{over}"
        )
        self.redraw()

    def _begin(self) -> SpeedupSpec:
        spec = self.spec()
        self.progress.max = max(1, len(plan_points(spec)))
        self.progress.value = 0
        self.result, self._stop = None, False
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.status.value = "running…"
        return spec

    def _end(self, spec: SpeedupSpec | None) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True
        if self.result is not None and spec is not None:
            stopped = " (stopped)" if self._stop else ""
            self.status.value = f"done: {len(self.result.points)} points of {spec.experiment}{stopped}"

    def _error(self, exc: Exception) -> None:
        self.status.value = error_html(exc, "error")

    def _guarded(self, action: Callable[[], Any]) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - shown in the panel instead of lost in a callback
            self._error(exc)


def _factors_html(result: SpeedupResult) -> str:
    """The POP factors of a traced result as preformatted text under its table (``""`` untraced)."""
    text = format_pop(result, experiments.get(result.experiment).size_name)
    return f"<p><b>POP factors</b> (one traced run per point; 1 = ideal)</p><pre style='white-space: pre; overflow-x: auto'>{html.escape(text)}</pre>" if text else ""
