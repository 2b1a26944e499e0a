"""Why is it slow? Every waiting interval of a trace, classified by Scalasca's wait-state patterns.

A call *waits* while it cannot finish before another rank has done something:

========================  =====================================================================
pattern                   the waiting call, and what it waits for
========================  =====================================================================
Late Sender               a receive (``Recv``, the ``Probe``/``Mprobe`` before it, ``Sendrecv``;
                          or the Wait/Test that completes an ``Irecv`` or a started
                          ``Recv_init``), until the matching send began
Late Receiver             a synchronous send (``Ssend``; the Wait/Test of an ``Issend`` or a
                          started ``Ssend_init``; with *eager_bytes*, any send at least that
                          large: a rendezvous), until the matching receive was posted
Wait at N×N               ``Allreduce``, ``Allgather(v)``, ``Alltoall(v)`` (and their
                          non-blocking and persistent forms), until the last member arrived
Wait at Barrier           ``Barrier`` (``Ibarrier``, ``Barrier_init``), until the last arrived
Late Broadcast            a non-root of ``Bcast``/``Scatter(v)``, until the root arrived
Early Reduce              the root of ``Reduce``/``Gather(v)``, until the last non-root arrived
========================  =====================================================================

Waiting time is ``clip(cause, start, end) - start`` for the waiting call's ``[start, end]``
and the moment the cause happened (the matching send's start, …). A non-blocking operation
waits in the call that completes it (its ``t_done``). A call that waits for several things (a
``Waitall``) counts once, for the last of them. Collectives are matched per communicator in
call order (every member calls them in the same order), so sub-communicators count as
``COMM_WORLD`` does. Times are the trace's, after its clock correction.

Pure NumPy, no MPI.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Trace (trace/model.py) and CallSites (trace/sites.py) are named in annotations only: not
# imported, so that the Trace can offer these analyses as methods without an import cycle.
from mpiworkbench.trace.events import (
    KIND, KINDS, STARTED_RECEIVES, STARTS, TESTS, WAITS, kind_name,
)

PATTERNS = ("Late Sender", "Late Receiver", "Wait at N×N", "Wait at Barrier", "Late Broadcast", "Early Reduce")
LATE_SENDER, LATE_RECEIVER, WAIT_NXN, WAIT_BARRIER, LATE_BROADCAST, EARLY_REDUCE = range(len(PATTERNS))

#: One waiting interval: *rank* waited *seconds* from *t_start* in call *kind* (its event
#: *event*) for *cause_rank*'s call *cause_event*, on communicator *comm* (an index in
#: ``Trace.comms``; -1 not known); *site* and *cause_site* are the Python lines of the two
#: calls (indices in ``WaitStates.sites``; -1 not recorded).
WAIT_DTYPE = np.dtype([
    ("pattern", "i1"), ("rank", "i4"), ("cause_rank", "i4"), ("kind", "i4"), ("comm", "i4"),
    ("t_start", "f8"), ("seconds", "f8"), ("event", "i8"), ("cause_event", "i8"),
    ("site", "i8"), ("cause_site", "i8"),
])

#: A dependency: call *block* (waiting from *lo* to *hi*) could not end before *cause_t*, the
#: start of *cause_event* on *cause_rank*; collectives name their *group* (one per instance
#: and role; -1 for point-to-point).
DEPENDENCY_DTYPE = np.dtype([
    ("pattern", "i1"), ("block", "i8"), ("lo", "f8"), ("hi", "f8"), ("cause_t", "f8"),
    ("cause_rank", "i4"), ("cause_event", "i8"), ("comm", "i4"), ("group", "i8"),
])


def _ids(*names: str) -> np.ndarray:
    return np.array(sorted(KIND[n] for n in names))


_BARRIER = _ids("MPI_Barrier", "MPI_Ibarrier", "MPI_Barrier_init")
_NXN = _ids("MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall", "MPI_Alltoallv", "MPI_Iallreduce",
            "MPI_Iallgather", "MPI_Ialltoall", "MPI_Allreduce_init", "MPI_Allgather_init", "MPI_Alltoall_init")
_ONE_TO_ALL = _ids("MPI_Bcast", "MPI_Scatter", "MPI_Scatterv", "MPI_Ibcast", "MPI_Iscatter", "MPI_Bcast_init")
_ALL_TO_ONE = _ids("MPI_Reduce", "MPI_Gather", "MPI_Gatherv", "MPI_Ireduce", "MPI_Igather", "MPI_Reduce_init")
_BLOCKING_COLLECTIVES = _ids("MPI_Barrier", "MPI_Allreduce", "MPI_Allgather", "MPI_Allgatherv", "MPI_Alltoall",
                             "MPI_Alltoallv", "MPI_Bcast", "MPI_Scatter", "MPI_Scatterv", "MPI_Reduce",
                             "MPI_Gather", "MPI_Gatherv")
_COMPLETIONS = np.array(sorted((WAITS | TESTS) - {KIND["MPI_Probe"], KIND["MPI_Mprobe"]}))
_PROBES = _ids("MPI_Probe", "MPI_Mprobe")
_STARTS = np.array(sorted(STARTS))
_STARTED_RECEIVES = np.array(sorted(STARTED_RECEIVES))
_SYNC_SENDS = _ids("MPI_Ssend", "MPI_Issend")
_NONBLOCKING_SENDS = _ids("MPI_Isend", "MPI_Issend")
_PLAIN_SENDS = _ids("MPI_Send", "MPI_Isend", "MPI_Send_init")


def regions(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Each rank's traced region ``(starts, ends)``: its window, or (none recorded) its first
    call's start to its last call's end."""
    ev = trace.events
    starts, ends = np.zeros(trace.nranks), np.zeros(trace.nranks)
    first = np.searchsorted(ev["rank"], np.arange(trace.nranks))
    last = np.searchsorted(ev["rank"], np.arange(trace.nranks), side="right")
    for rank in range(trace.nranks):
        a, b = trace.windows[rank] if rank < len(trace.windows) else (0.0, 0.0)
        if not b and last[rank] > first[rank]:
            a = float(ev["t0"][first[rank]])
            b = float(ev["t1"][first[rank]:last[rank]].max())
        starts[rank], ends[rank] = a, b
    return starts, ends


def completions(trace: Trace, idx: np.ndarray) -> np.ndarray:
    """For the events *idx* (non-blocking operations), the Wait or Test that completed each
    (-1: not seen): the completion call on the same rank whose end is the operation's ``t_done``."""
    ev = trace.events
    idx = np.asarray(idx, dtype=np.int64)
    out = np.full(len(idx), -1, dtype=np.int64)
    done = ev["t_done"][idx]
    comp = np.flatnonzero(np.isin(ev["kind"], _COMPLETIONS))
    for rank in np.unique(ev["rank"][idx]).tolist():
        mine = comp[ev["rank"][comp] == rank]
        want = np.flatnonzero((ev["rank"][idx] == rank) & (done != 0))
        if not len(mine) or not len(want):
            continue
        order = np.argsort(ev["t1"][mine], kind="stable")
        ends = ev["t1"][mine][order]
        pos = np.clip(np.searchsorted(ends, done[want]), 0, len(ends) - 1)
        near = np.clip(pos - 1, 0, len(ends) - 1)
        pick = np.where(np.abs(ends[near] - done[want]) < np.abs(ends[pos] - done[want]), near, pos)
        ok = np.abs(ends[pick] - done[want]) <= 1e-9 + 1e-12 * np.abs(done[want])
        out[want[ok]] = mine[order[pick[ok]]]
    return out


def _op_kinds(ev: np.ndarray) -> np.ndarray:
    """The operation of each event: a Start's init (``op``), every other call its own kind."""
    started = np.isin(ev["kind"], _STARTS)
    return np.where(started, ev["op"], ev["kind"])


def _p2p(trace: Trace, eager_bytes: int | None) -> list[np.ndarray]:
    ev = trace.events
    m = trace.messages()
    if not len(m):
        return []
    s, r = m["send"].astype(np.int64), m["recv"].astype(np.int64)
    op = _op_kinds(ev)
    # the receive side: a non-blocking receive waits in its completion; a Recv/Mrecv right after
    # a Probe/Mprobe of the same rank waited in the probe (mpi4py's comm.recv is Mprobe + Mrecv)
    nb_recv = (ev["kind"][r] == KIND["MPI_Irecv"]) | (np.isin(ev["kind"][r], _STARTS) & np.isin(op[r], _STARTED_RECEIVES))
    prev = np.maximum(r - 1, 0)
    probed = (~nb_recv & (r > 0) & np.isin(ev["kind"][prev], _PROBES) & (ev["rank"][prev] == ev["rank"][r])
              & np.isin(ev["kind"][r], _ids("MPI_Recv", "MPI_Mrecv")))
    posted = np.where(probed, prev, r)
    r_block = np.where(nb_recv, -1, posted)
    if nb_recv.any():
        r_block[nb_recv] = completions(trace, r[nb_recv])
    out = [_rows(LATE_SENDER, r_block, ev["t0"][s], ev["rank"][s], s, m["comm"], ev)]
    # the send side: synchronous (or, with eager_bytes, large: rendezvous) sends wait for the post
    sync = np.isin(op[s], _SYNC_SENDS) | (op[s] == KIND["MPI_Ssend_init"])
    if eager_bytes is not None:
        sync |= np.isin(op[s], _PLAIN_SENDS) & (ev["bytes"][s] >= eager_bytes)
    if sync.any():
        s2, post2 = s[sync], posted[sync]
        nb_send = np.isin(ev["kind"][s2], _NONBLOCKING_SENDS) | np.isin(ev["kind"][s2], _STARTS)
        s_block = s2.copy()
        if nb_send.any():
            s_block[nb_send] = completions(trace, s2[nb_send])
        out.append(_rows(LATE_RECEIVER, s_block, ev["t0"][post2], ev["rank"][post2], post2, m["comm"][sync], ev))
    return out


def _rows(pattern: int, block: np.ndarray, cause_t, cause_rank, cause_event, comm, ev, group=None) -> np.ndarray:
    ok = block >= 0
    out = np.zeros(int(ok.sum()), DEPENDENCY_DTYPE)
    b = block[ok]
    out["pattern"], out["block"], out["lo"], out["hi"] = pattern, b, ev["t0"][b], ev["t1"][b]
    out["cause_t"], out["cause_rank"], out["cause_event"] = np.asarray(cause_t)[ok], np.asarray(cause_rank)[ok], np.asarray(cause_event)[ok]
    out["comm"] = np.asarray(comm)[ok]
    out["group"] = -1 if group is None else np.asarray(group)[ok]
    return out


def collective_instances(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The collective calls (blocking, non-blocking, started persistent) as ``(events, group,
    op)``: the k-th collective of each member on a communicator is one instance (*group*)."""
    ev = trace.events
    op = _op_kinds(ev)
    every = np.concatenate([_BARRIER, _NXN, _ONE_TO_ALL, _ALL_TO_ONE])
    idx = np.flatnonzero(np.isin(op, every) & (ev["kind"] != KIND["MPI_Startall"]) & (ev["comm"] >= 0))
    if not len(idx):
        return idx, idx, idx
    comm, rank = ev["comm"][idx].astype(np.int64), ev["rank"][idx].astype(np.int64)
    order = np.lexsort((idx, rank, comm))
    key = comm[order] * (trace.nranks + 1) + rank[order]
    first = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    ordinal = np.empty(len(idx), dtype=np.int64)
    ordinal[order] = np.arange(len(idx)) - np.repeat(first, np.diff(np.r_[first, len(idx)]))
    _, group = np.unique(comm * (len(idx) + 1) + ordinal, return_inverse=True)
    return idx, group.astype(np.int64), op[idx]


def _group_max(group: np.ndarray, values: np.ndarray, events: np.ndarray, ngroups: int):
    """Per group, the largest value and the event that has it (-inf, -1 for none)."""
    best = np.full(ngroups, -np.inf)
    who = np.full(ngroups, -1, dtype=np.int64)
    ok = np.isfinite(values)
    order = np.lexsort((values[ok], group[ok]))
    g, v, e = group[ok][order], values[ok][order], events[ok][order]
    if len(g):
        last = np.r_[np.flatnonzero(np.diff(g)), len(g) - 1]
        best[g[last]], who[g[last]] = v[last], e[last]
    return best, who


def _collectives(trace: Trace) -> list[np.ndarray]:
    ev = trace.events
    idx, group, op = collective_instances(trace)
    if not len(idx):
        return []
    ngroups = int(group.max()) + 1
    blocking = np.isin(ev["kind"][idx], _BLOCKING_COLLECTIVES)
    block = idx.copy()
    if (~blocking).any():
        block[~blocking] = completions(trace, idx[~blocking])
    arrive = ev["t0"][idx]
    is_root = ev["peer"][idx] == ev["rank"][idx]
    out = []
    latest, latest_ev = _group_max(group, arrive, idx, ngroups)
    for pattern, kinds in ((WAIT_BARRIER, _BARRIER), (WAIT_NXN, _NXN)):
        sel = np.isin(op, kinds)
        g = group[sel]
        out.append(_rows(pattern, block[sel], latest[g], ev["rank"][np.maximum(latest_ev[g], 0)], latest_ev[g],
                         ev["comm"][idx[sel]], ev, g))
    root_t, root_ev = _group_max(group, np.where(is_root, arrive, -np.inf), idx, ngroups)
    sel = np.isin(op, _ONE_TO_ALL) & ~is_root
    g = group[sel]
    out.append(_rows(LATE_BROADCAST, np.where(root_ev[g] >= 0, block[sel], -1), root_t[g],
                     ev["rank"][np.maximum(root_ev[g], 0)], root_ev[g], ev["comm"][idx[sel]], ev, g + ngroups))
    other_t, other_ev = _group_max(group, np.where(is_root, -np.inf, arrive), idx, ngroups)
    sel = np.isin(op, _ALL_TO_ONE) & is_root
    g = group[sel]
    out.append(_rows(EARLY_REDUCE, np.where(other_ev[g] >= 0, block[sel], -1), other_t[g],
                     ev["rank"][np.maximum(other_ev[g], 0)], other_ev[g], ev["comm"][idx[sel]], ev, g + 2 * ngroups))
    return out


def dependencies(trace: Trace, eager_bytes: int | None = None) -> np.ndarray:
    """Every dependency of one rank's call on another rank's (:data:`DEPENDENCY_DTYPE`): per
    message, the receive on the send's start (and a synchronous send on the receive's post);
    per collective member, its call on the latest arrival that concerns it. For collectives
    (field ``group``), the replay (:mod:`~mpiworkbench.trace.critical`) recomputes the latest
    arrival among the group's members itself."""
    parts = _p2p(trace, eager_bytes) + _collectives(trace)
    return np.concatenate(parts) if parts else np.zeros(0, DEPENDENCY_DTYPE)


def binding(deps: np.ndarray) -> np.ndarray:
    """Per waiting call, the one dependency that ended its wait (the latest cause)."""
    if not len(deps):
        return deps
    order = np.lexsort((deps["cause_t"], deps["block"]))
    d = deps[order]
    last = np.r_[np.flatnonzero(np.diff(d["block"])), len(d) - 1]
    return d[last]


def waiting(trace: Trace, deps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of *deps*, the :func:`binding` ones on another rank that made their call wait, and the
    seconds each waited."""
    deps = binding(deps)
    if len(deps):
        deps = deps[deps["cause_rank"] != trace.events["rank"][deps["block"]]]
    wait = np.clip(deps["cause_t"], deps["lo"], deps["hi"]) - deps["lo"]
    return deps[wait > 0], wait[wait > 0]


@dataclass
class WaitStates:
    """The waiting intervals of a trace (:func:`wait_states`).

    Attributes
    ----------
    intervals : numpy.ndarray
        :data:`WAIT_DTYPE`, by start time.
    nranks : int
    busy : numpy.ndarray
        Seconds of each rank's traced region (what the waiting is a share of).
    comms : list of str
        Names of the trace's communicators (``intervals["comm"]`` indexes it).
    sites : list of str
        ``file:line in function`` of the calls (``intervals["site"]``; empty: not recorded).
    """

    intervals: np.ndarray
    nranks: int
    busy: np.ndarray
    comms: list[str] = field(default_factory=list)
    sites: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.intervals)

    def seconds(self, pattern: str | None = None, rank: int | None = None, cause_rank: int | None = None) -> float:
        """Seconds waited, in *pattern* (a name of :data:`PATTERNS`), by *rank*, for *cause_rank*."""
        sel = self._select(pattern, rank, cause_rank)
        return float(self.intervals["seconds"][sel].sum())

    def of(self, pattern: str | None = None, rank: int | None = None, cause_rank: int | None = None) -> np.ndarray:
        """The intervals of *pattern*, of waiting *rank*, caused by *cause_rank* (``None``: any)."""
        return self.intervals[self._select(pattern, rank, cause_rank)]

    def _select(self, pattern, rank, cause_rank) -> np.ndarray:
        w = self.intervals
        sel = np.ones(len(w), dtype=bool)
        if pattern is not None:
            if pattern not in PATTERNS:
                raise ValueError(f"unknown wait-state pattern {pattern!r}; the patterns are: {', '.join(PATTERNS)}")
            sel &= w["pattern"] == PATTERNS.index(pattern)
        if rank is not None:
            sel &= w["rank"] == rank
        if cause_rank is not None:
            sel &= w["cause_rank"] == cause_rank
        return sel

    def fraction(self) -> float:
        """Waiting seconds over every rank's traced seconds."""
        total = float(self.busy.sum())
        return float(self.intervals["seconds"].sum()) / total if total > 0 else 0.0

    def site(self, index: int) -> str | None:
        """The Python line (``file:line in function``) of call site *index*, None when unknown."""
        return self.sites[index] if 0 <= index < len(self.sites) else None

    def by_pattern_rank(self) -> dict[str, list[float]]:
        """Seconds waited per pattern (keys: :data:`PATTERNS`) per waiting rank."""
        w = self.intervals
        table = np.zeros((len(PATTERNS), self.nranks))
        np.add.at(table, (w["pattern"].astype(np.int64), w["rank"]), w["seconds"])
        return {p: table[i].tolist() for i, p in enumerate(PATTERNS)}

    def by_call_site(self, top: int | None = None) -> list[dict]:
        """Per (waiting line, call, pattern), most seconds first: ``site``, ``call``, ``pattern``,
        ``seconds``, ``count``, ``ranks`` (waiting), ``cause_site`` (the line of the cause that
        made it wait longest), ``cause_ranks``."""
        w = self.intervals
        if not len(w):
            return []
        key = ((w["site"] + 1) * len(KINDS) + w["kind"]) * len(PATTERNS) + w["pattern"]
        keys, inverse = np.unique(key, return_inverse=True)
        seconds = np.bincount(inverse, weights=w["seconds"])
        count = np.bincount(inverse)
        ckey = inverse * (len(self.sites) + 1) + (w["cause_site"] + 1)
        ckeys, cinv = np.unique(ckey, return_inverse=True)
        csec = np.bincount(cinv, weights=w["seconds"])
        order = np.lexsort((csec, ckeys // (len(self.sites) + 1)))
        owner = ckeys[order] // (len(self.sites) + 1)
        last = np.r_[np.flatnonzero(np.diff(owner)), len(owner) - 1]
        cause_of = dict(zip(owner[last].tolist(), (ckeys[order][last] % (len(self.sites) + 1) - 1).tolist()))
        rank_sets = _sets(inverse, w["rank"], len(keys))
        cause_sets = _sets(inverse, w["cause_rank"], len(keys))
        rows = []
        for g in np.argsort(-seconds, kind="stable")[: top if top is not None else len(keys)].tolist():
            k = int(keys[g])
            site, rest = divmod(k, len(KINDS) * len(PATTERNS))
            kind, pattern = divmod(rest, len(PATTERNS))
            rows.append({"site": self.site(site - 1), "call": kind_name(kind), "pattern": PATTERNS[pattern],
                         "seconds": float(seconds[g]), "count": int(count[g]), "ranks": rank_sets[g],
                         "cause_site": self.site(cause_of[g]), "cause_ranks": cause_sets[g]})
        return rows

    def to_dict(self, top: int = 20) -> dict:
        """For JSON: totals, the pattern × rank table, the top call sites."""
        return {"patterns": list(PATTERNS), "seconds": float(self.intervals["seconds"].sum()),
                "fraction": self.fraction(), "intervals": len(self), "by_pattern_rank": self.by_pattern_rank(),
                "by_call_site": self.by_call_site(top)}

    def records(self) -> list[dict]:
        """Every interval as a dict (names, not indices): what other tools read."""
        w = self.intervals
        return [{"pattern": PATTERNS[int(r["pattern"])], "rank": int(r["rank"]), "cause_rank": int(r["cause_rank"]),
                 "call": kind_name(int(r["kind"])),
                 "comm": self.comms[int(r["comm"])] if 0 <= r["comm"] < len(self.comms) else None,
                 "t_start": float(r["t_start"]), "seconds": float(r["seconds"]),
                 "site": self.site(int(r["site"])), "cause_site": self.site(int(r["cause_site"]))} for r in w]

    def text(self, top: int = 5) -> str:
        """The pattern × rank table and the top call sites, in words."""
        table = self.by_pattern_rank()
        head = f"waiting: {self.intervals['seconds'].sum():.4f} s, {self.fraction():.1%} of the ranks' time"
        lines = [head, "  " + "pattern".ljust(16) + "".join(f"rank {r}".rjust(11) for r in range(self.nranks))]
        for p in PATTERNS:
            if any(table[p]):
                lines.append("  " + p.ljust(16) + "".join(f"{s:10.4f}s" for s in table[p]))
        sites = self.by_call_site(top)
        if sites:
            lines.append("top waiting call sites:")
        for row in sites:
            where = row["site"] or "(line not recorded)"
            cause = f"; caused at {row['cause_site']}" if row["cause_site"] else ""
            lines.append(f"  {row['seconds']:.4f} s {row['pattern']} in {row['call']} at {where} "
                         f"(ranks {row['ranks']} waiting for {row['cause_ranks']}{cause})")
        return "\n".join(lines)


def _sets(inverse: np.ndarray, values: np.ndarray, n: int) -> list[list[int]]:
    pairs = np.unique(inverse.astype(np.int64) * (int(values.max()) + 2) + values + 1) if len(values) else np.zeros(0, np.int64)
    out: list[list[int]] = [[] for _ in range(n)]
    base = int(values.max()) + 2 if len(values) else 1
    for p in pairs.tolist():
        out[p // base].append(p % base - 1)
    return out


def wait_states(trace: Trace, sites: CallSites | None = None, eager_bytes: int | None = None,
                deps: np.ndarray | None = None) -> WaitStates:
    """Every waiting interval of *trace*, classified (:data:`PATTERNS`), with the waiting and the
    causing rank, call, communicator and (with *sites*, by default ``trace.sites``) the Python
    lines of both calls.

    *eager_bytes*: count a standard send of at least this many bytes as synchronous (the MPI
    library sends it by rendezvous); ``None`` counts only ``Ssend``/``Issend``/``Ssend_init``.
    *deps*: :func:`dependencies` of the trace, when already computed.
    """
    ev = trace.events
    deps, wait = waiting(trace, dependencies(trace, eager_bytes) if deps is None else deps)
    out = np.zeros(len(deps), WAIT_DTYPE)
    out["pattern"], out["rank"], out["cause_rank"] = deps["pattern"], ev["rank"][deps["block"]], deps["cause_rank"]
    out["kind"], out["comm"], out["t_start"], out["seconds"] = ev["kind"][deps["block"]], deps["comm"], deps["lo"], wait
    out["event"], out["cause_event"] = deps["block"], deps["cause_event"]
    table: list[str] = []
    if sites is None:
        sites = getattr(trace, "sites", None)
    if sites is not None:
        of = sites.of_events(ev)
        out["site"], out["cause_site"], table = of[deps["block"]], of[deps["cause_event"]], list(sites.table)
    else:
        out["site"] = out["cause_site"] = -1
    starts, ends = regions(trace)
    return WaitStates(out[np.argsort(out["t_start"], kind="stable")], trace.nranks, ends - starts,
                      [c.name for c in trace.comms], table)
