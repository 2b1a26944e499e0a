"""How efficient was the traced region? The POP Centre of Excellence's multiplicative metrics.

For the ranks' *useful* time (computation: each rank's traced region minus its time inside MPI
calls) and the region's *runtime* (earliest start to latest end)::

    load balance              LB   = mean(useful) / max(useful)
    communication efficiency  CommE = max(useful) / runtime
    serialisation efficiency  SerE = max(useful) / ideal runtime
    transfer efficiency       TrfE = ideal runtime / runtime          (CommE = SerE × TrfE)
    parallel efficiency       PE   = LB × CommE = mean(useful) / runtime

The *ideal runtime* is the run replayed on an instantaneous network
(:func:`mpiworkbench.trace.critical.ideal_runtime`): computations keep their recorded lengths,
MPI calls take no time and end as soon as the messages and collectives they depend on allow.
What is left of the waiting there is serialisation (dependencies between the ranks'
computations); what the replay removed is transfer.

Across a strong-scaling sweep (:func:`scaling`; the same problem at several rank counts),
with the sweep's first point as the reference::

    computation scalability   CompS = sum(useful) at the reference / sum(useful) at n
    global efficiency         GE   = PE × CompS

Pure NumPy, no MPI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

# Trace (trace/model.py) is named in annotations only: not imported, so that the Trace can
# offer these analyses as methods without an import cycle.
from mpiworkbench.trace.critical import ideal_runtime
from mpiworkbench.trace.waits import regions


@dataclass
class Efficiency:
    """The POP factors of one trace (fractions of 1; see the module's text)."""

    nranks: int
    runtime: float
    ideal_runtime: float
    useful: list[float]
    load_balance: float
    communication: float
    serialisation: float
    transfer: float
    parallel: float

    def to_dict(self) -> dict:
        return asdict(self)

    def text(self) -> str:
        return (f"POP factors ({self.nranks} ranks, {self.runtime:.4f} s; ideal network {self.ideal_runtime:.4f} s): "
                f"parallel efficiency {self.parallel:.3f} = load balance {self.load_balance:.3f} × communication "
                f"{self.communication:.3f} (serialisation {self.serialisation:.3f} × transfer {self.transfer:.3f})")


def useful_seconds(trace: Trace) -> np.ndarray:
    """Per rank, seconds of its traced region outside MPI calls (calls clipped to the region;
    calls that overlap, as folded tests may, counted once)."""
    ev = trace.events
    starts, ends = regions(trace)
    if not len(ev):
        return ends - starts
    rank = ev["rank"]
    t0 = np.clip(ev["t0"], starts[rank], ends[rank])
    t1 = np.clip(ev["t1"], starts[rank], ends[rank])
    first = np.r_[True, rank[1:] != rank[:-1]]
    # the part of each call not already covered by the calls before it on its rank
    # the latest end of the calls before each on its rank (the running maximum restarts at each
    # rank: ranks are made disjoint by an offset larger than any region)
    span = float(ends.max() - starts.min()) + 1.0
    reach = np.maximum.accumulate(np.r_[-np.inf, (t1 + rank * span)[:-1]]) - rank * span
    reach = np.where(first, -np.inf, reach)
    inside = np.maximum(t1 - np.maximum(t0, reach), 0.0)
    mpi = np.bincount(rank, weights=inside, minlength=trace.nranks)
    return np.maximum((ends - starts) - mpi, 0.0)


def efficiency(trace: Trace, deps: np.ndarray | None = None) -> Efficiency:
    """The POP factors of the traced region (see the module's text); *deps*: the trace's
    :func:`~mpiworkbench.trace.waits.dependencies`, when already computed."""
    starts, ends = regions(trace)
    runtime = float(ends.max() - starts.min()) if trace.nranks else 0.0
    useful = useful_seconds(trace)
    ideal = ideal_runtime(trace, deps)
    top = float(useful.max()) if len(useful) else 0.0
    mean = float(useful.mean()) if len(useful) else 0.0

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else 1.0

    lb, comm = ratio(mean, top), ratio(top, runtime)
    ser, trf = ratio(top, ideal), ratio(ideal, runtime)
    return Efficiency(trace.nranks, runtime, ideal, useful.tolist(), lb, comm, ser, trf, lb * comm)


def scaling(traces: Sequence[Trace], reference: int = 0) -> list[dict]:
    """Per trace of a strong-scaling sweep (the same problem at several rank counts), its POP
    factors and ``computation_scalability`` (total useful time of ``traces[reference]`` over
    its own) and ``global_efficiency`` (parallel efficiency × computation scalability)."""
    if traces and not 0 <= reference < len(traces):
        raise ValueError(f"reference must index one of the {len(traces)} traces; got {reference}")
    return scaling_of([efficiency(t) for t in traces], reference)


def scaling_of(rows: Sequence[Efficiency], reference: int = 0) -> list[dict]:
    """:func:`scaling` from each trace's :func:`efficiency` (what a speedup sweep keeps of its
    traced points, :mod:`mpiworkbench.speedup.analysis`)."""
    if not rows:
        return []
    if not 0 <= reference < len(rows):
        raise ValueError(f"reference must index one of the {len(rows)} rows; got {reference}")
    base = sum(rows[reference].useful)
    out = []
    for row in rows:
        total = sum(row.useful)
        scal = base / total if total > 0 else 1.0
        out.append({**row.to_dict(), "computation_scalability": scal, "global_efficiency": row.parallel * scal})
    return out
