"""How a panel shows a failure: one line, or the workbench's rank-by-rank report when ranks
failed or hung (the same text ``%%px`` and ``wb.run`` raise)."""

from __future__ import annotations

import html

from mpiworkbench.client.errors import WorkbenchError


def error_html(exc: BaseException, what: str = "run failed") -> str:
    """*exc* as HTML for a panel's status line; a :class:`~mpiworkbench.client.errors.WorkbenchError`
    (ranks failed, ranks still running after ``wb.timeout``) keeps its report's lines and advice."""
    head = f"<b style='color:#b2182b'>{html.escape(what)}:</b> {type(exc).__name__}"
    if isinstance(exc, WorkbenchError):
        return f"{head}<pre class='mpiwb-rank-report'>{html.escape(str(exc))}</pre>"
    return f"{head}: {html.escape(str(exc))}"
