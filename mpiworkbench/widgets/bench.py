"""The micro-benchmark panel: choose, Run (a live log–log plot), Stop, save/reload/overlay.

Runs go through the one sweep driver of :mod:`mpiworkbench.drivers.bench` — blocking for
:meth:`BenchPanel.run`, in the background for **Run** — the same functions code calls.

MPI implementation: the engines run under one (``Workbench(n=2, mpi="openmpi")``); the panel
names it above the controls, every row names it (``mpi``), and when the rows drawn (this run
and loaded ones) come from several implementations, every line is labelled with its
implementation (``c (openmpi)``). **Also under** runs the same sweep, after the engines' run,
on as many ranks of this host under each other implementation chosen
(:func:`mpiworkbench.drivers.bench.run_under`: the ``bench --mpi NAME`` command itself), and puts
them side by side in one document (:func:`mpiworkbench.bench.results.side_by_side`), as
``mpiworkbench bench … --mpi mpich,openmpi,impi`` does; or load such a document.

Control ``description``s (stable, for tests and documentation): ``Benchmark``,
``Backends``, ``Sizes``, ``Ranks``, ``Mode``, ``Time cap (s)``, ``Metric``, ``Also under``, ``Run``,
``Stop``, ``Progress``, ``File``, ``Save``, ``Load``, ``Clear overlays``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Callable, Sequence

from mpiworkbench.bench import results
from mpiworkbench.bench.catalog import BENCHMARKS
from mpiworkbench.bench.fit import pingpong_fits
from mpiworkbench.client.calls.trace import tracing
from mpiworkbench.drivers import bench as driver
from mpiworkbench.drivers.bench import DEFAULT_BACKENDS
from mpiworkbench.plot import bench as bench_plot, render
from mpiworkbench.widgets import implementations
from mpiworkbench.widgets.file_bar import file_bar
from mpiworkbench.widgets.report import error_html
from mpiworkbench.widgets.trace import TraceView


class BenchPanel:
    """ipywidgets panel: choose, Run (live log–log plot), Stop, save/reload/overlay runs."""

    def __init__(self, wb, benchmark: str = "pingpong", backends=DEFAULT_BACKENDS,
                 sizes: str | Sequence[int] = "8:1M", width: float = 7.5):
        import ipywidgets as w

        self.wb, self.width = wb, width
        self.doc: dict | None = None
        self.overlays: list[dict] = []
        self.rows: list[dict] = []
        self._stop = False
        self._task = None
        names = list(BENCHMARKS)
        self.benchmark = w.Dropdown(options=names, value=benchmark, description="Benchmark")
        self.backends = w.SelectMultiple(options=list(DEFAULT_BACKENDS), value=tuple(backends),
                                         description="Backends", rows=4)
        if not isinstance(sizes, str):  # [8, 1024] reads as the text "8,1024"
            sizes = ",".join(str(size) for size in sizes)
        self.sizes = w.Text(value=sizes, description="Sizes")
        self.ranks = w.BoundedIntText(value=wb.n, min=1, max=wb.n, description="Ranks")
        self.mode = w.Dropdown(options=["osu", "block"], value="osu", description="Mode")
        self.cap = w.BoundedFloatText(value=1.0, min=0.01, max=60, description="Time cap (s)")
        self.repeats = w.BoundedIntText(value=1, min=1, max=50, description="Repeats",
                                        tooltip="time every size this many times (backends interleaved); "
                                                "rows show the median")
        self.metric = w.Dropdown(options=[("time (µs)", "t_us"), ("throughput (MB/s)", "throughput_MBps")],
                                 value="t_us", description="Metric")
        self.trace_box = w.Checkbox(value=False, description="Trace", indent=False,
                                    tooltip="record every rank's MPI calls during the run (timings include "
                                            "the tracing overhead) and show the timeline below")
        self.trace_view = w.VBox()
        self.also = implementations.selector(wb, "bench")  # the same sweep under other implementations, here
        self.trace = None  # the last traced run's Trace
        self.run_button = w.Button(description="Run", button_style="primary")
        self.stop_button = w.Button(description="Stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="Progress")
        self.status = w.HTML()
        level = getattr(wb, "thread_level", None) or "mpi4py's default (multiple)"
        mpi = getattr(wb, "mpi", None)
        self.thread_info = w.HTML(
            (f"MPI implementation of the engines: <b>{mpi}</b> — one per cluster, e.g. "
             "<code>Workbench(n=2, mpi=\"openmpi\")</code>; save and load runs to compare them<br>" if mpi else "")
            + f"MPI thread level of the engines: <b>{level}</b> — every backend runs at it; it is chosen "
            "when the cluster starts, e.g. <code>Workbench(n=2, thread_level=\"single\")</code>")
        self.image = w.Image(format="png")
        self.table = w.HTML()
        self.file_bar = file_bar("bench.json", lambda: self._report(self.save), lambda: self._report(self.load),
                                 self.clear_overlays)
        self.file, self.save_button, self.load_button, self.clear_button = self.file_bar.children
        self.run_button.on_click(lambda _: self.start())
        self.stop_button.on_click(lambda _: self.stop())
        self.metric.observe(lambda _: self.redraw(), names="value")
        self.widget = w.VBox([
            self.thread_info,
            w.HBox([self.benchmark, self.sizes, self.ranks]),
            w.HBox([self.backends, w.VBox([self.mode, self.cap, self.repeats, self.metric]), self.also]),
            w.HBox([self.run_button, self.stop_button, self.trace_box, self.progress]),
            self.status, self.image, self.table, self.trace_view,
            self.file_bar,
        ])

    # -- ordinary methods (the callbacks call only these) -----------------------------
    def settings(self) -> dict:
        """The sweep the controls describe: keyword arguments of the :mod:`~mpiworkbench.drivers.bench` driver."""
        return {"benchmark": self.benchmark.value, "backends": list(self.backends.value),
                "sizes": self.sizes.value, "ranks": self.ranks.value,
                "collective_mode": self.mode.value, "time_cap_s": self.cap.value,
                "repeats": self.repeats.value}

    def run(self) -> dict:
        """Run with the current settings, blocking, redrawing after every size."""
        self._begin()
        try:
            with self._tracing():
                self.doc = driver.run_on_workbench(self.wb, **self.settings(), on_rows=self._on_rows,
                                                   should_stop=lambda: self._stop)
            docs, failed = [], {}
            for mpi in implementations.in_turn(self):
                try:
                    docs.append(driver.run_under(mpi, **self._settings_under()))
                except (RuntimeError, ValueError) as exc:
                    failed[mpi] = str(exc)
            self._side_by_side(docs, failed)
        finally:
            self._end()
        return self.doc

    def start(self):
        """Run in the background (the kernel stays free, so Stop works); returns the task."""
        self.run_button.disabled = self.stop_button.disabled = True  # until the task takes over
        self._task = asyncio.ensure_future(self.run_async())
        return self._task

    async def run_async(self) -> dict | None:
        """What **Run** does: the same sweep, waited on without blocking the kernel."""
        self._begin()
        try:
            with self._tracing():
                self.doc = await driver.run_async(self.wb, **self.settings(), on_rows=self._on_rows,
                                                  should_stop=lambda: self._stop)
            docs, failed = [], {}
            for mpi in implementations.in_turn(self):
                try:
                    docs.append(await driver.run_under_async(mpi, **self._settings_under()))
                except (RuntimeError, ValueError) as exc:
                    failed[mpi] = str(exc)
            self._side_by_side(docs, failed)
        except Exception as exc:  # noqa: BLE001 - shown in the panel (a hang: the rank-by-rank report)
            self.status.value = error_html(exc, "error")
        finally:
            self._end()
        return self.doc

    def stop(self) -> None:
        """Finish the size in progress, then stop; the partial results stay."""
        self._stop = True
        self.status.value = "stopping after this size…"

    def save(self) -> str:
        """Save the last run's document as JSON to the file box's path (**Save**); what it did, in words."""
        if self.doc is None:
            raise ValueError("nothing to save yet; press Run first")
        results.save(self.file.value, self.doc)
        return f"saved {len(self.doc['rows'])} rows to {self.file.value}"

    def load(self) -> str:
        """Load the JSON document named in the file box as a comparison overlay (**Load**); what it did, in words."""
        doc = results.load(self.file.value)
        self.overlays.append(doc)
        self.redraw()
        return f"overlaid {doc['benchmark']} run {doc['run_id']} ({len(doc['rows'])} rows)"

    def clear_overlays(self) -> None:
        """Forget the loaded comparison documents and redraw (**Clear**)."""
        self.overlays.clear()
        self.redraw()

    def redraw(self) -> None:
        """Draw the figure and the fit table again from the current and loaded results."""
        rows = [r for d in self.overlays for r in d["rows"]] + self.rows
        several = len(results.by_mpi(rows)) > 1
        fits = None
        if self.benchmark.value == "pingpong":  # this run's fits, per implementation
            fits = ({f"{backend} ({mpi})": f for mpi, mine in results.by_mpi(self.rows).items()
                     for backend, f in pingpong_fits(mine).items()} if several else pingpong_fits(self.rows))
        if several:  # several implementations: every line says which
            rows = [{**r, "backend": f"{r['backend']} ({r.get('mpi', 'unknown')})"} for r in rows]
        fig = bench_plot.sweep_figure(rows, self.metric.value, title=self.benchmark.value, fits=fits, width=self.width)
        self.image.value = render.figure_to_png(fig)
        self.table.value = fit_table_html(fits or {})

    # -- internals ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _tracing(self):
        """With **Trace** ticked, the run is recorded and its trace shown under the plot."""
        if not self.trace_box.value:
            yield
            return
        recording = tracing(self.wb)
        try:
            with recording:
                yield
        finally:
            if recording.trace is not None:
                self.trace = recording.trace
                self.trace_view.children = [TraceView(recording.trace, width=self.width).widget]

    def _settings_under(self) -> dict:
        """:meth:`settings` for :func:`~mpiworkbench.drivers.bench.run_under`: at the engines' thread level."""
        return {**self.settings(), "thread_level": getattr(self.wb, "thread_level", None) or "multiple"}

    def _side_by_side(self, docs: list[dict], failed: dict[str, str]) -> None:
        """The engines' run and the runs under other implementations as one document."""
        if not docs and not failed:
            return
        self.doc = results.side_by_side([self.doc, *docs], failed, planned=1 + len(docs) + len(failed))
        self.rows = list(self.doc["rows"])
        self.redraw()

    def _begin(self) -> None:
        self._stop = False
        self.rows = []
        self.doc = None
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.progress.value, self.progress.max = 0, 1
        self.status.value = "running…"

    def _end(self) -> None:
        self.run_button.disabled, self.stop_button.disabled = False, True
        if self.doc is not None:
            warn = "; ".join(self.doc["environment"]["warnings"])
            skipped = "; ".join(f"{k}: {v}" for k, v in self.doc["skipped"].items())
            env = self.doc["environment"]
            libraries = ", ".join(e.get("mpi_library", "?") for e in (self.doc.get("environments") or {"": env}).values())
            failed = "; ".join(f"{k}: {v}" for k, v in self.doc.get("failed", {}).items())
            self.status.value = (f"{len(self.doc['rows'])} rows, thread level {env['thread_level']}"
                                 + (f", {libraries}" if env.get("mpi_library") else "")
                                 + (f"<br><b>failed:</b> {failed}" if failed else "")
                                 + (f"<br><b>warning:</b> {warn}" if warn else "")
                                 + (f"<br>skipped {skipped}" if skipped else ""))

    def _on_rows(self, rows: list[dict], progress: dict) -> None:
        self.rows.extend(rows)
        self.progress.max, self.progress.value = progress["total"], progress["done"]
        self.redraw()

    def _report(self, action: Callable[[], str]) -> None:
        try:
            self.status.value = action()
        except (OSError, ValueError) as exc:
            self.status.value = f"<b>error:</b> {exc}"


def fit_table_html(fits: dict) -> str:
    """Thesis Table 5.1 layout for this run's ping-pong fits (HTML)."""
    if not fits:
        return ""
    head = "<tr><th>backend</th><th>latency (µs)</th><th>bandwidth (MB/s)</th><th>rms residual (µs)</th></tr>"
    body = "".join(
        f"<tr><td>{b}</td><td>{f['latency_us']:.2f}</td>"
        f"<td>{'—' if f['bandwidth_MBps'] is None else format(f['bandwidth_MBps'], '.0f')}</td>"
        f"<td>{f['rms_residual_us']:.2f}</td></tr>"
        for b, f in fits.items()
    )
    return f"<table>{head}{body}</table>"
