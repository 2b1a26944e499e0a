"""What set the run's length: the critical path through the message and collective graph, and
the run replayed on an ideal network.

Both walk the dependency graph of :func:`mpiworkbench.trace.waits.dependencies`: each rank's
calls in order, separated by its computation, and the cross-rank edges (a receive cannot end
before its send began, a synchronous send before its receive was posted, a collective member
before the arrivals it waits for).

* :func:`critical_path` walks the *recorded* run backwards from the rank that ended last: along
  that rank until the latest call that waited for another rank (a wait state), then to the call
  it waited for on the causing rank, and so on to the start. The time on the path is each rank's
  share of the run's length.
* :func:`ideal_runtime` replays the graph with zero transfer time: every computation between
  two MPI calls keeps its recorded length, every MPI call takes no time of its own and ends as
  soon as its dependencies allow (a receive when its send starts, a collective when the
  arrivals it needs are in). The replay's length is what the run would take on an
  instantaneous network (POP's transfer efficiency is its ratio to the recorded length).

Pure NumPy and Python, no MPI. The walks loop in Python over the calls that depend on another
rank (one iteration per dependency or per hop of the path), with everything else vectorised.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

# Trace (trace/model.py) and CallSites (trace/sites.py) are named in annotations only: not
# imported, so that the Trace can offer these analyses as methods without an import cycle.
from mpiworkbench.trace.events import kind_name
from mpiworkbench.trace.waits import collective_instances, dependencies, regions, waiting

#: One piece of the critical path: on *rank* from *t0* to *t1*.
SEGMENT_DTYPE = np.dtype([("rank", "i4"), ("t0", "f8"), ("t1", "f8")])


def ideal_runtime(trace: Trace, deps: np.ndarray | None = None) -> float:
    """Seconds the traced region would take with zero transfer time (see the module's text):
    never more than the recorded length."""
    ev = trace.events
    starts, ends = regions(trace)
    runtime = float(ends.max() - starts.min()) if trace.nranks else 0.0
    if not len(ev):
        return runtime
    deps = dependencies(trace) if deps is None else deps
    n = len(ev)
    rank = ev["rank"]
    first = np.r_[True, rank[1:] != rank[:-1]]
    before = np.where(first, starts[rank], np.r_[0.0, ev["t1"][:-1]])
    gap = np.maximum(ev["t0"] - before, 0.0)
    # a call depends on sets of cause events: one per message (ids < 0), one per collective
    # instance and role, shared by its members (ids >= 0, those of dependencies())
    set_of = np.where(deps["group"] < 0, -1 - np.arange(len(deps)), deps["group"])
    cause_sets = _cause_sets(trace, deps, set_of)
    blocks: dict[int, list[int]] = {}
    for b, s in zip(deps["block"].tolist(), set_of.tolist()):
        blocks.setdefault(b, []).append(s)
    # replay in the recorded order of call ends: every cause's previous call has ended by then
    order = np.lexsort((np.arange(n), ev["t1"])).tolist()
    gaps, is_first = gap.tolist(), first.tolist()
    start_of = starts[rank].tolist()
    end = [0.0] * n
    done = [False] * n
    cache: dict[int, float] = {}

    def ideal_start(j: int) -> float:
        if is_first[j]:
            return start_of[j] + gaps[j]
        return (end[j - 1] if done[j - 1] else float(ev["t1"][j - 1])) + gaps[j]

    for i in order:
        t = ideal_start(i)
        for s in blocks.get(i, ()):
            v = cache.get(s)
            if v is None:
                v = max((ideal_start(j) for j in cause_sets[s]), default=-np.inf)
                cache[s] = v
            if v > t:
                t = v
        end[i], done[i] = t, True
    last = np.r_[np.flatnonzero(rank[1:] != rank[:-1]), n - 1]
    ideal_ends = np.array(end)[last] + (ends[rank[last]] - ev["t1"][last])
    finish = ends.copy()
    finish[rank[last]] = ideal_ends
    return min(float(finish.max() - starts.min()), runtime)


def _cause_sets(trace: Trace, deps: np.ndarray, set_of: np.ndarray) -> dict[int, list[int]]:
    """Each message's set: its cause; each collective set: the arrival events of the members that
    concern it (every member; the root of a broadcast; the non-roots of a reduction)."""
    p2p = set_of < 0
    cause_sets = {s: [c] for s, c in zip(set_of[p2p].tolist(), deps["cause_event"][p2p].tolist())}
    wanted = sorted(set(set_of[~p2p].tolist()))
    if not wanted:
        return cause_sets
    for s in wanted:
        cause_sets[s] = []
    idx, group, _ = collective_instances(trace)
    ev = trace.events
    ngroups = int(group.max()) + 1
    is_root = ev["peer"][idx] == ev["rank"][idx]
    for offset, sel in ((0, np.ones(len(idx), bool)), (ngroups, is_root), (2 * ngroups, ~is_root)):
        g = group[sel] + offset
        keep = np.isin(g, wanted)
        for s, e in zip(g[keep].tolist(), idx[sel][keep].tolist()):
            cause_sets[s].append(e)
    return cause_sets


@dataclass
class CriticalPath:
    """The critical path of a trace (:func:`critical_path`).

    Attributes
    ----------
    segments : numpy.ndarray
        :data:`SEGMENT_DTYPE`, from the start of the run to its end.
    length : float
        Seconds from the earliest start to the latest end.
    seconds : numpy.ndarray
        Seconds of the path on each rank.
    mpi_seconds : numpy.ndarray
        Of those, seconds inside MPI calls.
    sites : list of dict
        The calls on the path, most seconds first: ``site`` (the Python line, or ``None``),
        ``call``, ``seconds``, ``count``.
    """

    segments: np.ndarray
    length: float
    seconds: np.ndarray
    mpi_seconds: np.ndarray
    sites: list[dict] = field(default_factory=list)

    @property
    def shares(self) -> np.ndarray:
        """Each rank's share of the path (sums to 1)."""
        total = float(self.seconds.sum())
        return self.seconds / total if total > 0 else self.seconds

    @property
    def hops(self) -> int:
        """How many times the path moves from one rank to another."""
        return max(len(self.segments) - 1, 0)

    def to_dict(self, top: int = 10) -> dict:
        return {"length_s": self.length, "hops": self.hops, "seconds_per_rank": self.seconds.tolist(),
                "share_per_rank": self.shares.tolist(), "mpi_seconds_per_rank": self.mpi_seconds.tolist(),
                "call_sites": self.sites[:top]}

    def text(self, top: int = 5) -> str:
        shares = ", ".join(f"rank {r}: {s:.0%} ({c - m:.3f} s computing, {m:.3f} s in MPI)"
                           for r, (s, c, m) in enumerate(zip(self.shares, self.seconds, self.mpi_seconds)) if c > 0)
        lines = [f"critical path: {self.length:.4f} s, {self.hops} hops between ranks; {shares}"]
        for row in self.sites[:top]:
            lines.append(f"  {row['seconds']:.4f} s in {row['call']} at {row['site'] or '(line not recorded)'} "
                         f"({row['count']} calls)")
        return "\n".join(lines)


def critical_path(trace: Trace, sites: CallSites | None = None, deps: np.ndarray | None = None) -> CriticalPath:
    """The path of the recorded run that set its length (see the module's text), with each
    rank's share of it and the calls on it (their Python lines with *sites*)."""
    ev = trace.events
    starts, ends = regions(trace)
    if not trace.nranks:
        return CriticalPath(np.zeros(0, SEGMENT_DTYPE), 0.0, np.zeros(0), np.zeros(0))
    deps, _ = waiting(trace, dependencies(trace) if deps is None else deps)
    # per rank, the waiting calls in call order (event indices ascend within a rank)
    by_rank: list[list[int]] = [[] for _ in range(trace.nranks)]
    info: dict[int, tuple[float, int, int]] = {}
    for b, t, r, c in zip(deps["block"].tolist(), deps["cause_t"].tolist(), deps["cause_rank"].tolist(),
                          deps["cause_event"].tolist()):
        by_rank[int(ev["rank"][b])].append(b)
        info[b] = (t, r, c)
    for lst in by_rank:
        lst.sort()
    # the rank that ended last (of equal ends, the one whose last call ended last)
    last_call = np.full(trace.nranks, -np.inf)
    if len(ev):
        np.maximum.at(last_call, ev["rank"], ev["t1"])
    rank = int(np.lexsort((last_call, ends))[-1])
    t, limit = float(ends[rank]), len(ev)  # limit: only calls before this index are looked at
    segs: list[tuple[int, float, float]] = []
    for _ in range(len(deps) + 1):
        lst = by_rank[rank]
        k = bisect.bisect_left(lst, limit) - 1
        while k >= 0 and info[lst[k]][0] > t:
            k -= 1
        if k < 0:
            segs.append((rank, float(starts[rank]), t))
            break
        cause_t, cause_rank, cause_event = info[lst[k]]
        segs.append((rank, cause_t, t))
        rank, t, limit = cause_rank, cause_t, cause_event
    segments = np.array(segs[::-1], dtype=SEGMENT_DTYPE)
    seconds = np.bincount(segments["rank"], weights=segments["t1"] - segments["t0"], minlength=trace.nranks)
    mpi = _calls_on(trace, segments)
    mpi_seconds = np.bincount(ev["rank"], weights=mpi, minlength=trace.nranks) if len(ev) else np.zeros(trace.nranks)
    return CriticalPath(segments, float(ends.max() - starts.min()), seconds, mpi_seconds,
                        _site_rows(trace, sites, mpi))


def _calls_on(trace: Trace, segments: np.ndarray) -> np.ndarray:
    """Per event, its seconds on the path (> 0: on it)."""
    ev = trace.events
    seconds = np.zeros(len(ev))
    for rank in np.unique(segments["rank"]).tolist():
        segs = segments[segments["rank"] == rank]
        segs = segs[np.argsort(segs["t0"])]
        mine = np.flatnonzero(ev["rank"] == rank)
        if not len(mine):
            continue
        pos = np.searchsorted(segs["t0"], ev["t1"][mine], side="left") - 1
        ok = pos >= 0
        seg = segs[np.maximum(pos, 0)]
        overlap = np.minimum(ev["t1"][mine], seg["t1"]) - np.maximum(ev["t0"][mine], seg["t0"])
        seconds[mine] = np.where(ok, np.maximum(overlap, 0.0), 0.0)
    return seconds


def _site_rows(trace: Trace, sites: CallSites | None, seconds: np.ndarray) -> list[dict]:
    ev = trace.events
    idx = np.flatnonzero(seconds > 0)
    if not len(idx):
        return []
    sites = sites if sites is not None else getattr(trace, "sites", None)
    site = sites.of_events(ev)[idx] if sites is not None else np.full(len(idx), -1, dtype=np.int64)
    key = (site + 1) * 1024 + ev["kind"][idx]
    keys, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=seconds[idx])
    count = np.bincount(inverse)
    rows = []
    for g in np.argsort(-total, kind="stable").tolist():
        s, kind = divmod(int(keys[g]), 1024)
        rows.append({"site": sites.table[s - 1] if sites is not None and s > 0 else None, "call": kind_name(kind),
                     "seconds": float(total[g]), "count": int(count[g])})
    return rows
