"""The POP factors of a traced speedup sweep: which points have them, and them as a table.

A traced point (``SpeedupSpec(trace=True)``, ``speedup … --trace``) holds ``pop``
(:mod:`mpiworkbench.speedup.analysis` derives the scalability across its series); here they are
read out for the CLI's table and the figure's bars (:func:`mpiworkbench.plot.speedup.draw_factors`).
No MPI.
"""

from __future__ import annotations

import math
from typing import Any

from mpiworkbench.speedup.analysis import SpeedupResult, aligned, oversubscribed_note, series_name

__all__ = ["POP_FACTORS", "format_pop", "pop_series"]

#: The POP factors drawn and tabulated, in the methodology's order (key, label).
POP_FACTORS = (
    ("load_balance", "load balance"),
    ("communication", "communication"),
    ("serialisation", "serialisation"),
    ("transfer", "transfer"),
    ("parallel", "parallel efficiency"),
    ("computation_scalability", "computation scalability"),
    ("global_efficiency", "global efficiency"),
)


def pop_series(result: SpeedupResult) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The traced points (those with ``pop``) of every series of :meth:`SpeedupResult.series`
    that has some, sorted by rank count."""
    out = {}
    for key, pts in result.series().items():
        traced = [p for p in pts if p.get("pop")]
        if traced:
            out[key] = traced
    return out


def format_pop(result: SpeedupResult, size_name: str = "size") -> str:
    """The POP factors of the traced points as text: one row per series and rank count
    (``-`` where a factor is not defined: scalability under weak scaling); ``""`` untraced."""
    rows = [(key, p) for key, pts in pop_series(result).items() for p in pts]
    if not rows:
        return ""
    text = aligned([["series", "ranks", *(label for _, label in POP_FACTORS)]] + [
        [series_name(key, size_name), f"{p['nranks']}{' *' if p.get('oversubscribed') else ''}",
         *(_factor_text(p["pop"].get(k)) for k, _ in POP_FACTORS)] for key, p in rows])
    if any(p.get("oversubscribed") for _, p in rows):
        text += oversubscribed_note(result)
    dropped = [p for _, p in rows if p["pop"].get("dropped")]
    if dropped:
        text += ("\n! the trace buffer overflowed at " + ", ".join(f"{p['nranks']} rank(s)" for p in dropped)
                 + ": those factors miss the calls not recorded")
    return text


def _factor_text(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3f}"
