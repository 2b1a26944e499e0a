"""A trace in the notebook: the timeline (zoomable), the communication matrix and the time per
call kind, and an export to Chrome trace-event JSON — composed from :mod:`mpiworkbench.plot.trace`.

    TraceView(t.trace).widget      # after `with wb.trace() as t: …`
"""

from __future__ import annotations

from mpiworkbench.trace.model import Trace


class TraceView:
    """ipywidgets view of a :class:`~mpiworkbench.trace.model.Trace`.

    Parameters
    ----------
    trace : Trace
    width : float
        Figure width in inches.
    title : str, optional
        Title of the timeline.
    """

    def __init__(self, trace: Trace, width: float = 9.0, title: str | None = None):
        import ipywidgets as w

        if trace is None:
            raise ValueError("no trace to show: the traced block has not finished (or recorded nothing)")
        self.trace, self.width, self.title = trace, width, title
        from mpiworkbench.plot.trace import span

        first, last = span(trace)
        end = max(trace.duration, last, 1e-9)
        self.summary = w.HTML(f"<b>trace</b>: {trace.summary()}")
        self.zoom = w.FloatRangeSlider(value=(first, last), min=0.0, max=end, step=end / 1000,
                                       description="Zoom (s)", readout_format=".6f",
                                       continuous_update=False, layout=w.Layout(width="95%"))
        self.arrows = w.Checkbox(value=True, description="message arrows")
        self.timeline_image = w.Image(format="png")
        self.matrix_what = w.ToggleButtons(options=["bytes", "messages"], value="bytes")
        self.matrix_image = w.Image(format="png")
        self.kinds_image = w.Image(format="png")
        self.file = w.Text(value="trace.json", description="File")
        self.export_button = w.Button(description="Export JSON", tooltip="Chrome trace-event JSON (Perfetto)")
        self.status = w.HTML()
        self.zoom.observe(lambda _: self.draw_timeline(), names="value")
        self.arrows.observe(lambda _: self.draw_timeline(), names="value")
        self.matrix_what.observe(lambda _: self.draw_matrix(), names="value")
        self.export_button.on_click(lambda _: self.export())
        tabs = w.Tab(children=[
            w.VBox([w.HBox([self.arrows]), self.zoom, self.timeline_image]),
            w.VBox([self.matrix_what, self.matrix_image]),
            self.kinds_image,
        ])
        for i, name in enumerate(("Timeline", "Matrix", "Time per call")):
            tabs.set_title(i, name)
        self.widget = w.VBox([self.summary, tabs, w.HBox([self.file, self.export_button]), self.status])
        self.widget.add_class("mpiwb-trace-view")
        self.draw()

    def draw(self) -> None:
        """Draw all three views: timeline, communication matrix, time per call kind."""
        self.draw_timeline()
        self.draw_matrix()
        self.draw_kinds()

    def draw_timeline(self) -> None:
        """Draw the timeline of the current zoom window: calls per rank, arrows send → receive."""
        from mpiworkbench.plot.render import figure_to_png
        from mpiworkbench.plot.trace import timeline

        lo, hi = self.zoom.value
        if hi <= lo:
            return
        fig = timeline(self.trace, lo, hi, arrows=self.arrows.value, title=self.title, width=self.width)
        self.timeline_image.value = figure_to_png(fig)

    def draw_matrix(self) -> None:
        """Draw the communication matrix (messages and bytes from rank to rank)."""
        from mpiworkbench.plot.render import figure_to_png
        from mpiworkbench.plot.trace import matrix_figure

        self.matrix_image.value = figure_to_png(matrix_figure(self.trace, self.matrix_what.value))

    def draw_kinds(self) -> None:
        """Draw the time spent per MPI call kind and rank."""
        from mpiworkbench.plot.render import figure_to_png
        from mpiworkbench.plot.trace import time_per_kind_figure

        self.kinds_image.value = figure_to_png(time_per_kind_figure(self.trace, width=self.width * 0.8))

    def export(self) -> str:
        """Write the trace as Chrome trace-event JSON to the file named in the panel."""
        from mpiworkbench.plot.trace import write_chrome

        path = write_chrome(self.trace, self.file.value)
        self.status.value = f"written to {path} (open it in Perfetto or chrome://tracing)"
        return str(path)
