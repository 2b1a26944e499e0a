"""The thesis's least-squares model t = latency + size / bandwidth (eq. 5.1), and overheads.

The thesis fitted its ping-pong times this way and reported Table 5.1 as (latency µs,
bandwidth MB/s) per module. An unweighted fit is dominated by the large sizes (their
times are largest), so the intercept can differ from the small-message latency — the
residual and the measured 8 B time are reported beside it so a reader can tell.
"""

from __future__ import annotations

import numpy as np


def fit_latency_bandwidth(sizes: list[int], times_us: list[float]) -> dict:
    """Least-squares fit of ``t_us = latency_us + size / bandwidth_MBps``.

    Returns latency (µs), bandwidth (MB/s = bytes/µs; None when the times do not grow
    with size, e.g. on a loaded machine), the RMS residual (µs), the
    largest relative residual, and the number of points. Needs two distinct sizes.
    """
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times_us, dtype=float)
    if s.size < 2 or np.unique(s).size < 2:
        raise ValueError(f"the fit needs at least two distinct message sizes; got {sorted(set(sizes))}")
    design = np.column_stack([np.ones_like(s), s])
    (latency, slope), *_ = np.linalg.lstsq(design, t, rcond=None)
    model = latency + slope * s
    resid = t - model
    return {
        "latency_us": float(latency),
        "bandwidth_MBps": float(1.0 / slope) if slope > 0 else None,  # no positive slope: no bandwidth
        "rms_residual_us": float(np.sqrt(np.mean(resid**2))),
        "max_rel_residual": float(np.max(np.abs(resid) / t)),
        "points": int(s.size),
        "sizes": [int(s.min()), int(s.max())],
    }


def pingpong_fits(rows: list[dict]) -> dict[str, dict]:
    """Table 5.1 for a set of rows: the fit per backend of every ping-pong run."""
    fits: dict[str, dict] = {}
    for backend in dict.fromkeys(r["backend"] for r in rows if r["benchmark"] == "pingpong"):
        mine = [r for r in rows if r["benchmark"] == "pingpong" and r["backend"] == backend]
        if len({r["size"] for r in mine}) < 2:
            continue
        fit = fit_latency_bandwidth([r["size"] for r in mine], [r["t_us"] for r in mine])
        smallest = min(mine, key=lambda r: r["size"])
        fit["smallest_size"] = smallest["size"]
        fit["smallest_t_us"] = smallest["t_us"]
        fits[backend] = fit
    return fits


def overhead_vs_c(rows: list[dict], reference: str = "c") -> list[dict]:
    """Relative overhead (t / t_ref − 1, in %) of each backend against *reference* per size.

    Paper 001 Figs. 2, 4, 6 plot exactly this per message size. Each row is compared with the
    reference of its own run and MPI implementation (``mpi``): every library against its own C.
    """
    ref = {(r["run_id"], r.get("mpi"), r["benchmark"], r["size"]): r["t_us"]
           for r in rows if r["backend"] == reference}
    out = []
    for r in rows:
        key = (r["run_id"], r.get("mpi"), r["benchmark"], r["size"])
        if r["backend"] == reference or key not in ref or ref[key] <= 0:
            continue
        out.append({
            "run_id": r["run_id"], "benchmark": r["benchmark"], "backend": r["backend"],
            "size": r["size"], "overhead_pct": 100.0 * (r["t_us"] / ref[key] - 1.0),
            **({"mpi": r["mpi"]} if "mpi" in r else {}),
        })
    return out
