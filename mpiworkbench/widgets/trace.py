"""A trace in the notebook: the timeline (zoomable, per communicator, its waiting time shaded by
wait-state pattern and the longest waits named with their causes), the communication matrix and
the time per call kind, and an export to Chrome trace-event JSON — composed from
:mod:`mpiworkbench.plot.trace`.

    TraceView(t.trace).widget      # after `with wb.trace() as t: …`
"""

from __future__ import annotations

import html

from mpiworkbench.plot.render import figure_to_png
from mpiworkbench.plot.trace import (
    comm_name, matrix_figure, select_comm, span, time_per_kind_figure, timeline, wait_sentences,
)
from mpiworkbench.trace.chrome import write_chrome
from mpiworkbench.trace.model import Trace

#: The communicator dropdown's value for every communicator at once.
ALL = "all"


def communicator_options(trace: Trace) -> list[tuple[str, object]]:
    """The communicator dropdown's ``(label, value)`` pairs: all, then each of ``trace.comms``
    with its size."""
    options: list[tuple[str, object]] = [("All", ALL)]
    for c in trace.comms:
        options.append((f"{c.name} ({c.size} rank{'s' if c.size != 1 else ''})" if c.ranks else c.name, c.id))
    return options


class TraceView:
    """ipywidgets view of a :class:`~mpiworkbench.trace.model.Trace`.

    Parameters
    ----------
    trace : Trace
    width : float
        Figure width in inches.
    title : str, optional
        Title of the timeline.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The panel to display.
    comm : ipywidgets.Dropdown
        All communicators, or one of ``trace.comms``: the timeline and the matrix show its calls.
    warning : ipywidgets.HTML
        Shown when the trace buffer was full (:meth:`Trace.overflow`).
    timeline_figure : matplotlib.figure.Figure
        The timeline last drawn.
    waits : ipywidgets.Checkbox
        Shade the waiting time by pattern (:meth:`Trace.wait_states`) and name the longest waits
        of the window, with their causes, under the timeline (:attr:`wait_text`).
    """

    def __init__(self, trace: Trace, width: float = 9.0, title: str | None = None):
        import ipywidgets as w

        if trace is None:
            raise ValueError("no trace to show: the traced block has not finished (or recorded nothing)")
        self.trace, self.width, self.title = trace, width, title
        # per communicator: its trace and (once asked) its messages; per (communicator, what):
        # the matrix picture. Each is a pass over every event, not to repeat on each zoom.
        self._on: dict[object, Trace] = {}
        self._matrices: dict[tuple[object, str], bytes] = {}
        self.timeline_figure = None
        self._waits = None  # the trace's wait states, computed when first shown

        first, last = span(trace)
        end = max(trace.duration, last, 1e-9)
        self.summary = w.HTML(f"<b>trace</b>: {html.escape(trace.summary())}")
        # a full buffer: the figures miss calls, said above them in red, with the fix
        warning = trace.overflow()
        text = f'<span style="color:#b00020"><b>⚠ {html.escape(warning)}</b></span>' if warning else ""
        self.warning = w.HTML(text, layout=w.Layout(display=None if warning else "none"))
        self.warning.add_class("mpiwb-trace-overflow")
        options = communicator_options(trace)
        self.comm = w.Dropdown(options=options, value=ALL, description="Communicator",
                               disabled=len(options) < 2, style={"description_width": "initial"})
        self.zoom = w.FloatRangeSlider(value=(first, last), min=0.0, max=end, step=end / 1000,
                                       description="Zoom (s)", readout_format=".6f",
                                       continuous_update=False, layout=w.Layout(width="95%"))
        self.arrows = w.Checkbox(value=True, description="message arrows")
        self.waits = w.Checkbox(value=True, description="wait states")
        self.wait_text = w.HTML()
        self.wait_text.add_class("mpiwb-trace-waits")
        self.timeline_image = w.Image(format="png")
        self.matrix_what = w.ToggleButtons(options=["bytes", "messages"], value="bytes")
        self.matrix_image = w.Image(format="png")
        self.kinds_image = w.Image(format="png")
        self.file = w.Text(value="trace.json", description="File")
        self.export_button = w.Button(description="Export JSON", tooltip="Chrome trace-event JSON (Perfetto)")
        self.status = w.HTML()
        self.zoom.observe(lambda _: self.draw_timeline(), names="value")
        self.arrows.observe(lambda _: self.draw_timeline(), names="value")
        self.waits.observe(lambda _: self.draw_timeline(), names="value")
        self.comm.observe(lambda _: (self.draw_timeline(), self.draw_matrix()), names="value")
        self.matrix_what.observe(lambda _: self.draw_matrix(), names="value")
        self.export_button.on_click(lambda _: self.export())
        tabs = w.Tab(children=[
            w.VBox([w.HBox([self.arrows, self.waits]), self.zoom, self.timeline_image, self.wait_text]),
            w.VBox([self.matrix_what, self.matrix_image]),
            self.kinds_image,
        ])
        for i, name in enumerate(("Timeline", "Matrix", "Time per call")):
            tabs.set_title(i, name)
        self.widget = w.VBox([self.summary, self.warning, self.comm, tabs,
                              w.HBox([self.file, self.export_button]), self.status])
        self.widget.add_class("mpiwb-trace-view")
        self.draw()

    # ------------------------------------------------------------------ the chosen communicator
    def _comm(self):
        return None if self.comm.value == ALL else self.comm.value

    def shown(self) -> Trace:
        """The trace as the communicator dropdown selects it (all of it, or one communicator's)."""
        comm = self._comm()
        if comm not in self._on:
            self._on[comm] = select_comm(self.trace, comm)
        return self._on[comm]

    def _title(self, what: str | None) -> str | None:
        comm = self._comm()
        if comm is None:
            return what
        return f"{what or f'MPI calls of {self.trace.nranks} rank(s)'} on {comm_name(self.trace, comm)}"

    # ------------------------------------------------------------------ drawing
    def draw(self) -> None:
        """Draw all three views: timeline, communication matrix, time per call kind."""
        self.draw_timeline()
        self.draw_matrix()
        self.draw_kinds()

    def draw_timeline(self) -> None:
        """Draw the timeline of the current zoom window and communicator: calls per rank, arrows
        send → receive (every call, or downsampled when the window holds too many)."""
        lo, hi = self.zoom.value
        if hi <= lo:
            return
        waits = self.wait_states() if self.waits.value else None
        fig = timeline(self.shown(), lo, hi, arrows=self.arrows.value, title=self._title(self.title),
                       width=self.width, waits=waits)
        self.timeline_figure = fig
        self.timeline_image.value = figure_to_png(fig)
        sentences = wait_sentences(waits, self.trace, lo, hi) if waits is not None else []
        self.wait_text.value = ("<b>longest waits in view</b><br>" + "<br>".join(map(html.escape, sentences))
                                if sentences else "")

    def wait_states(self):
        """The trace's :meth:`~mpiworkbench.trace.model.Trace.wait_states` (computed once)."""
        if self._waits is None:
            self._waits = self.trace.wait_states()
        return self._waits

    def draw_matrix(self) -> None:
        """Draw the communication matrix (messages and bytes from rank to rank) of the chosen
        communicator."""
        key = (self._comm(), self.matrix_what.value)
        if key not in self._matrices:
            what = self.matrix_what.value
            title = self._title(f"{what} sent, rank × rank")
            self._matrices[key] = figure_to_png(matrix_figure(self.shown(), what, title=title))
        self.matrix_image.value = self._matrices[key]

    def draw_kinds(self) -> None:
        """Draw the time spent per MPI call kind and rank."""
        self.kinds_image.value = figure_to_png(time_per_kind_figure(self.trace, width=self.width * 0.8))

    def export(self) -> str:
        """Write the trace as Chrome trace-event JSON to the file named in the panel."""
        path = write_chrome(self.trace, self.file.value)
        self.status.value = f"written to {path} (open it in Perfetto or chrome://tracing)"
        return str(path)
