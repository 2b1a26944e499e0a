"""Side-by-side syntax tables in the notebook, and a panel that runs them on the cluster.

Ordinary functions first: :func:`side_by_side_html` renders the snippet files — C first —
with, when a report is given, each column's status, printed output and whether every rank
matched the reference; :func:`summary_line` says it in one line. :class:`SyntaxPanel`
composes them with the client's :func:`~mpiworkbench.drivers.syntax.run_lesson_on` (one
lesson's snippets on the engines, on the first ``nranks`` ranks; rank 0's report); its
callbacks only call these functions.

Control ``description``s: ``Lesson``, ``Ranks``, ``Historic``, ``Run``.
"""

from __future__ import annotations

import html
from typing import Any

from mpiworkbench.drivers.syntax import run_lesson_on
from mpiworkbench.syntax import lessons
from mpiworkbench.syntax.lessons import COLUMNS, CURRENT_COLUMNS, LESSONS
from mpiworkbench.syntax.tables import documented_syntax

_STATUS_STYLE = {
    "ok": ("✔ matches the reference", "#1a7f37"),
    "mismatch": ("✘ differs from the reference", "#cf222e"),
    "failed": ("✘ failed", "#cf222e"),
    "unsupported": ("— not available", "#6e7781"),
    "skipped": ("… skipped", "#6e7781"),
}


def show_code(path_or_text: str, language: str = "python") -> Any:
    """An IPython Markdown object showing a file (or text) as a code block."""
    from pathlib import Path

    from IPython.display import Markdown

    is_path = "\n" not in path_or_text and len(path_or_text) < 1024 and Path(path_or_text).is_file()
    text = Path(path_or_text).read_text() if is_path else path_or_text
    return Markdown(f"```{language}\n{text.rstrip()}\n```")


def _cell_header(column: str) -> str:
    if column in CURRENT_COLUMNS:
        return html.escape(column)
    return f"{html.escape(column)}<br><small>(emulated on mpi4py)</small>"


def _documented(lesson: str, column: str) -> str:
    module = "C" if column == "c" else column
    rows = []
    for op in LESSONS[lesson].operations:
        found = documented_syntax(op, module)
        if found:
            rows.append(f"<code>{html.escape(found[0])}</code> <small>(thesis {found[1]})</small>")
    return "<br>".join(rows)


def side_by_side_html(lesson: str, columns=None, report: dict[str, dict] | None = None) -> str:
    """One lesson as an HTML table: a column per backend, C first; results if *report*."""
    info = LESSONS[lesson]
    columns = list(columns or COLUMNS)
    head = "".join(f"<th style='text-align:left'>{_cell_header(c)}</th>" for c in columns)
    code_cells, doc_cells, result_cells = [], [], []
    for column in columns:
        if lessons.has_snippet(lesson, column):
            source = html.escape(lessons.snippet_source(lesson, column))
            path = lessons.snippet_path(lesson, column)
            code_cells.append(
                f"<td style='vertical-align:top'><pre style='font-size:11px;white-space:pre'>{source}</pre>"
                f"<small>{html.escape(path.parent.name + '/' + path.name)}</small></td>"
            )
        else:
            why = report[column].get("reason", "") if report and column in report else "no such call"
            code_cells.append(f"<td style='vertical-align:top;color:#6e7781'>— {html.escape(why)}</td>")
        doc_cells.append(f"<td style='vertical-align:top;font-size:11px'>{_documented(lesson, column)}</td>")
        if report is not None and column in report:
            rep = report[column]
            label, colour = _STATUS_STYLE[rep["status"]]
            detail = rep.get("error") or rep.get("reason") or ""
            outputs = [o for o in rep.get("outputs", []) if o]
            shown = "".join(f"<div>rank {r}: {html.escape(o.strip())}</div>" for r, o in enumerate(rep.get("outputs", [])) if o)
            results = "" if outputs else "".join(
                f"<div>rank {r}: {html.escape(str(v))}</div>" for r, v in enumerate(rep.get("results", [])))
            result_cells.append(
                f"<td style='vertical-align:top;font-size:11px'><b style='color:{colour}'>{label}</b>"
                f"<div>{html.escape(detail)}</div>{shown}{results}</td>"
            )
    rows = [f"<tr>{head}</tr>", f"<tr>{''.join(code_cells)}</tr>"]
    if any(doc_cells):
        rows.append(f"<tr>{''.join(doc_cells)}</tr>")
    if result_cells:
        rows.append(f"<tr>{''.join(result_cells)}</tr>")
    title = (f"<h4>{html.escape(info.title)} — thesis {html.escape(info.table)}</h4>"
             f"<p><i>{html.escape(info.scenario)}</i></p>")
    return f"{title}<div style='overflow-x:auto'><table>{''.join(rows)}</table></div>"


def summary_line(report: dict[str, dict]) -> str:
    """``c ok · mpi4py-obj ok · … · pypar —`` for a lesson's report."""
    marks = {"ok": "ok", "mismatch": "MISMATCH", "failed": "FAILED", "unsupported": "—", "skipped": "skip"}
    ordered = [c for c in COLUMNS if c in report] + [c for c in report if c not in COLUMNS]
    return " · ".join(f"{c} {marks[report[c]['status']]}" for c in ordered)


class SyntaxPanel:
    """Lesson picker, number of ranks, historic columns on/off, Run: the table with results."""

    def __init__(self, wb, lesson: str = "bcast"):
        import ipywidgets as w

        self.wb = wb
        self.lesson = w.Dropdown(options=[(LESSONS[k].title, k) for k in LESSONS], value=lesson, description="Lesson")
        self.ranks = w.IntSlider(value=wb.n, min=1, max=wb.n, description="Ranks")
        self.historic = w.Checkbox(value=True, description="Historic")
        self.button = w.Button(description="Run", button_style="primary")
        self.status = w.HTML()
        self.table = w.HTML(side_by_side_html(lesson))
        self.button.on_click(lambda _: self.run())
        self.lesson.observe(lambda _: self.show(), names="value")
        self.historic.observe(lambda _: self.show(), names="value")
        self.widget = w.VBox([w.HBox([self.lesson, self.ranks, self.historic, self.button]), self.status, self.table])
        self.last_report: dict[str, dict] | None = None

    def columns(self) -> list[str]:
        """The backends shown as columns (with the historic modules when that box is ticked)."""
        return list(COLUMNS if self.historic.value else CURRENT_COLUMNS)

    def show(self, report: dict[str, dict] | None = None) -> None:
        """Show the side-by-side table, with a run's *report* when there is one."""
        self.table.value = side_by_side_html(self.lesson.value, self.columns(), report)

    def run(self) -> dict[str, dict]:
        """Run the lesson's snippets on the cluster's ranks and show what each printed (**Run**)."""
        self.status.value = "running on the cluster…"
        try:
            report = run_lesson_on(self.wb, self.lesson.value, self.ranks.value, self.columns())
        except Exception as exc:  # noqa: BLE001 - shown in the panel, not lost in a callback
            self.status.value = f"<span style='color:#cf222e'>{html.escape(str(exc))}</span>"
            raise
        self.last_report = report
        self.status.value = html.escape(f"{self.ranks.value} rank(s): {summary_line(report)}")
        self.show(report)
        return report

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
