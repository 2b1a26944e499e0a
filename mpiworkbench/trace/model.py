"""A gathered trace: every rank's MPI calls on one clock, and what can be read from them —
the communicators (:mod:`~mpiworkbench.trace.communicators`), the messages (each send matched to
its receive on its communicator), the one-sided operations, the communication matrix, the time per
call kind, a window of it, and the exports: Chrome trace-event JSON (Perfetto, ``chrome://tracing``;
:mod:`~mpiworkbench.trace.chrome`) and OTF2 (Vampir, Score-P's tools; :mod:`~mpiworkbench.trace.otf2`).

Pure NumPy, no MPI: rank 0 builds it, the notebook plots it, the CLI writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpiworkbench.trace import chrome
from mpiworkbench.trace.communicators import Communicator, communicators, comms_used, remap_comms, untabled_comms
from mpiworkbench.trace.critical import CriticalPath, critical_path
from mpiworkbench.trace.efficiency import Efficiency, efficiency
from mpiworkbench.trace.events import (
    EVENT_DTYPE, KIND, KINDS, ONE_SIDED, RECEIVES, SENDS, STARTED_RECEIVES, STARTED_SENDS, STARTS, TRACE_DTYPE,
)
from mpiworkbench.trace.otf2 import write_otf2
from mpiworkbench.trace.waits import WaitStates, dependencies, wait_states

# CallSites (trace/sites.py) is named in an annotation only: sites is imported by the recorder,
# which imports this module.

#: A matched message: send on ``src`` at ``t_send`` → receive completed on ``dst`` at ``t_recv``,
#: on communicator ``comm`` (an index in ``Trace.comms``).
MESSAGE_DTYPE = np.dtype([
    ("src", "i4"), ("dst", "i4"), ("tag", "i4"), ("bytes", "i8"),
    ("t_send", "f8"), ("t_recv", "f8"), ("send", "i8"), ("recv", "i8"), ("comm", "i4"),
])
#: A one-sided operation: ``origin`` reads or writes ``target``'s window ``win`` (numbered in
#: creation order); ``t_complete`` is when the synchronisation that completed it returned at
#: the origin (0: not seen).
RMA_DTYPE = np.dtype([
    ("origin", "i4"), ("target", "i4"), ("kind", "i4"), ("bytes", "i8"),
    ("t_issue", "f8"), ("t_complete", "f8"), ("win", "i4"), ("comm", "i4"), ("event", "i8"),
])
_MRECV, _MPROBE, _IRECV = KIND["MPI_Mrecv"], KIND["MPI_Mprobe"], KIND["MPI_Irecv"]
_SENDS = np.array(sorted(SENDS)), np.array(sorted(STARTED_SENDS))
_RECEIVES = np.array(sorted(RECEIVES)), np.array(sorted(STARTED_RECEIVES))
_STARTS = np.array(sorted(STARTS))


@dataclass
class Trace:
    """Every rank's events (:data:`~mpiworkbench.trace.events.TRACE_DTYPE`), times in seconds
    from the start of the traced region on rank 0's clock.

    Attributes
    ----------
    events : numpy.ndarray
        One row per MPI call, ordered by rank, then call order.
    nranks : int
    hosts : list of str
    offsets : list of float
        Seconds subtracted from each rank's clock (0 when every rank is on one host, whose
        processes share one clock; across hosts the estimate, corrected so that no message is
        received before it was sent: :func:`causal_shifts`).
    estimated_offsets : list of float
        What the ping-pong estimate said.
    dropped : list of int
        Calls per rank that found the buffer full and were not recorded.
    windows : list of (float, float)
        Each rank's traced region (start, stop), on the trace's time axis.
    unfinished : list of int
        Rows of calls that had not returned when the trace was read (taken from outside a
        hung world: the call each rank is blocked in, ending at the moment it was read).
    comms : list of Communicator
        The communicators the events name (``events["comm"]`` indexes it; -1: none, e.g. a
        Wait, or not known). Index 0 is ``COMM_WORLD``.
    sites : mpiworkbench.trace.sites.CallSites or None
        The Python lines that made the calls, on the trace's time axis (``None``: not recorded);
        what :meth:`wait_states` and :meth:`critical_path` name.
    """

    events: np.ndarray
    nranks: int
    hosts: list[str] = field(default_factory=list)
    offsets: list[float] = field(default_factory=list)
    estimated_offsets: list[float] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    unfinished: list[int] = field(default_factory=list)
    comms: list[Communicator] = field(default_factory=list)
    sites: CallSites | None = field(default=None, compare=False, repr=False)
    _messages: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _dependencies: dict | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.comms:
            self.comms = [Communicator(0, "COMM_WORLD", tuple(range(self.nranks)), "world", None)]

    @classmethod
    def from_ranks(cls, per_rank: list[np.ndarray], offsets=None, estimated_offsets=None, hosts=None,
                   dropped=None, windows=None, open_last=None, causal: bool = False,
                   comm_tables: list[list[dict]] | None = None) -> "Trace":
        """Combine each rank's raw events (``EVENT_DTYPE``, the rank's own clock); *open_last*
        says per rank whether its last event is a call that had not returned yet. With *causal*
        (clocks of several hosts, *offsets* estimated), the offsets are then corrected so that
        no message is received before it was sent (:func:`causal_shifts`). *comm_tables* are
        the ranks' communicator tables (``recorder.local_comms``); without them (a trace read
        from outside a hung world) a communicator is known only by its index in the ranks'
        tables, the same on every rank of a program that makes its communicators in one order."""
        n = len(per_rank)
        offsets = list(offsets) if offsets is not None else [0.0] * n
        windows = list(windows) if windows is not None else [(0.0, 0.0)] * n
        if comm_tables is not None:
            comms, maps = communicators(comm_tables, n, [comms_used(ev) for ev in per_rank])
        else:
            comms, maps = untabled_comms(per_rank, n)
        rows = []
        for rank, ev in enumerate(per_rank):
            ev = np.asarray(ev, dtype=EVENT_DTYPE)
            part = np.zeros(len(ev), TRACE_DTYPE)
            part["rank"] = rank
            for name in EVENT_DTYPE.names:
                part[name] = ev[name]
            for name in ("t0", "t1"):
                part[name] -= offsets[rank]
            done = part["t_done"] != 0
            part["t_done"][done] -= offsets[rank]
            _source_of_matched_receives(part)
            remap_comms(part, maps[rank])
            rows.append(part)
        events = np.concatenate(rows) if rows else np.zeros(0, TRACE_DTYPE)
        ends = np.cumsum([len(r) for r in rows])
        unfinished = [int(end) - 1 for end, is_open in zip(ends, open_last or []) if is_open]
        # a window of (0, 0) is none recorded: it stays so
        shifted = [(a - offsets[r], b - offsets[r]) if (a or b) else (0.0, 0.0) for r, (a, b) in enumerate(windows)]
        starts = [w[0] for w in shifted if w[0]] + ([float(events["t0"].min())] if len(events) else [])
        origin = min(starts) if starts else 0.0
        events["t0"] -= origin
        events["t1"] -= origin
        done = events["t_done"] != 0
        events["t_done"][done] -= origin
        trace = cls(
            events=events, nranks=n, hosts=list(hosts or [""] * n), offsets=offsets,
            estimated_offsets=list(estimated_offsets if estimated_offsets is not None else offsets),
            dropped=list(dropped or [0] * n),
            windows=[(a - origin, b - origin) for a, b in shifted], unfinished=unfinished, comms=comms,
        )
        shift = causal_shifts(trace.messages(), n) if causal else None
        if not shift or not any(shift):
            return trace
        return cls.from_ranks(per_rank, [o - d for o, d in zip(offsets, shift)], trace.estimated_offsets,
                              hosts, dropped, windows, open_last, comm_tables=comm_tables)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.events)

    @property
    def duration(self) -> float:
        """Seconds from the trace's origin to its last recorded moment."""
        ends = [b for _, b in self.windows if b] + ([float(self.events["t1"].max())] if len(self) else [])
        return max(ends) if ends else 0.0

    def of_rank(self, rank: int) -> np.ndarray:
        """The events of one *rank*, in call order."""
        return self.events[self.events["rank"] == rank]

    def kinds(self) -> list[str]:
        """The call kinds present, in the interposer's order."""
        return [KINDS[k] for k in sorted(set(self.events["kind"].tolist()))]

    def count(self, kind: str, rank: int | None = None, comm: int | str | None = None) -> int:
        """How many calls of *kind* (e.g. ``"MPI_Send"``) the trace holds, on *rank* or on all
        ranks, on communicator *comm* or on any."""
        if kind not in KIND:
            raise ValueError(f"unknown call kind {kind!r}; the interposer records: {', '.join(KINDS)}")
        sel = self.events["kind"] == KIND[kind]
        if rank is not None:
            sel &= self.events["rank"] == rank
        if comm is not None:
            sel &= self.events["comm"] == self.comm(comm).id
        return int(sel.sum())

    def comm(self, which: int | str) -> Communicator:
        """The communicator with id or name *which* (``"COMM_WORLD"``, ``"dup 1"``, …)."""
        for c in self.comms:
            if which == c.id or which == c.name:
                return c
        raise ValueError(f"no communicator {which!r} in this trace; it has: "
                         + ", ".join(f"{c.id}: {c.name}" for c in self.comms))

    def on_comm(self, which: int | str) -> "Trace":
        """The calls made on one communicator (id or name); calls without one (waits, tests)
        are left out. Ranks stay world ranks."""
        return self._subset(self.events["comm"] == self.comm(which).id, self.windows)

    def window(self, t0: float, t1: float) -> "Trace":
        """The calls that overlap ``[t0, t1]`` (zoom to a step); times stay on the same axis."""
        ev = self.events
        keep = (ev["t1"] >= t0) & (ev["t0"] <= t1)
        return self._subset(keep, [(max(a, t0), min(b, t1)) for a, b in self.windows])

    def _subset(self, keep: np.ndarray, windows) -> "Trace":
        new_index = np.cumsum(keep) - 1
        return Trace(self.events[keep].copy(), self.nranks, self.hosts, self.offsets, self.estimated_offsets,
                     self.dropped, windows, [int(new_index[i]) for i in self.unfinished if keep[i]], self.comms,
                     self.sites)  # the lines are keyed by time: valid for any part of the trace

    def messages(self) -> np.ndarray:
        """Every point-to-point message, each send matched to its receive (computed once per
        trace: the result is shared, do not modify it).

        MPI does not let messages overtake: between one sender and one receiver, with one tag,
        on one communicator, the k-th send is received by the k-th matching receive. Receives by
        any source are placed by the source they actually got. Started persistent and
        partitioned operations count as their init says (a send or a receive). A send without a
        recorded receive (or the reverse) is left out.
        """
        key = (id(self.events), len(self.events))
        if self._messages is None or self._messages[0] != key:
            self._messages = (key, self._match_messages())
        return self._messages[1]

    def _match_messages(self) -> np.ndarray:
        ev = self.events
        started = np.isin(ev["kind"], _STARTS)
        is_send = (np.isin(ev["kind"], _SENDS[0]) | (started & np.isin(ev["op"], _SENDS[1]))) & (ev["peer"] >= 0)
        is_recv = (np.isin(ev["kind"], _RECEIVES[0]) | (started & np.isin(ev["op"], _RECEIVES[1]))) & (ev["peer2"] >= 0)
        s_idx, r_idx = np.flatnonzero(is_send), np.flatnonzero(is_recv)
        if not len(s_idx) or not len(r_idx):
            return np.zeros(0, MESSAGE_DTYPE)
        # one key per (communicator, source, destination, tag), shared by both sides
        keys = np.concatenate([
            np.stack([ev["comm"][s_idx], ev["rank"][s_idx], ev["peer"][s_idx], ev["tag"][s_idx]], axis=1),
            np.stack([ev["comm"][r_idx], ev["peer2"][r_idx], ev["rank"][r_idx], ev["tag2"][r_idx]], axis=1),
        ]).astype(np.int64)
        order = np.lexsort(keys.T[::-1])  # faster than np.unique(axis=0): docs/measurements.md, Tracing
        changes = np.any(np.diff(keys[order], axis=0) != 0, axis=1)
        group = np.empty(len(keys), dtype=np.int64)
        group[order] = np.concatenate([[0], np.cumsum(changes)])
        s_group, r_group = group[: len(s_idx)], group[len(s_idx):]

        def ordinals(idx: np.ndarray, grp: np.ndarray) -> np.ndarray:
            # the k-th call (by start time) of its group gets k
            order = np.lexsort((ev["t0"][idx], grp))
            sorted_grp = grp[order]
            first = np.r_[0, np.flatnonzero(np.diff(sorted_grp)) + 1]
            starts = np.repeat(first, np.diff(np.r_[first, len(order)]))
            out = np.empty(len(idx), dtype=np.int64)
            out[order] = np.arange(len(order)) - starts
            return out

        span = max(len(s_idx), len(r_idx)) + 1
        s_code = s_group.astype(np.int64) * span + ordinals(s_idx, s_group)
        r_code = r_group.astype(np.int64) * span + ordinals(r_idx, r_group)
        _, si, ri = np.intersect1d(s_code, r_code, assume_unique=True, return_indices=True)
        s, r = s_idx[si], r_idx[ri]
        out = np.zeros(len(s), MESSAGE_DTYPE)
        out["src"], out["dst"], out["tag"] = ev["rank"][s], ev["rank"][r], ev["tag"][s]
        out["bytes"], out["t_send"], out["send"], out["recv"] = ev["bytes"][s], ev["t0"][s], s, r
        out["comm"] = ev["comm"][s]
        completes_later = (ev["kind"][r] == _IRECV) | np.isin(ev["kind"][r], _STARTS)
        out["t_recv"] = np.where(completes_later & (ev["t_done"][r] != 0), ev["t_done"][r], ev["t1"][r])
        return out[np.lexsort((out["dst"], out["src"], out["t_send"]))]  # faster than np.sort(order=…): as above

    def rma(self) -> np.ndarray:
        """Every one-sided operation (:data:`RMA_DTYPE`): Put, Get, Accumulate, … from its
        origin to its target, issued at ``t_issue``, completed by the fence, unlock or flush
        that returned at ``t_complete``."""
        ev = self.events
        idx = np.flatnonzero(np.isin(ev["kind"], sorted(ONE_SIDED)) & (ev["peer"] >= 0))
        out = np.zeros(len(idx), RMA_DTYPE)
        out["origin"], out["target"], out["kind"] = ev["rank"][idx], ev["peer"][idx], ev["kind"][idx]
        out["bytes"], out["t_issue"], out["t_complete"] = ev["bytes"][idx], ev["t0"][idx], ev["t_done"][idx]
        out["win"], out["comm"], out["event"] = ev["req"][idx], ev["comm"][idx], idx
        return out

    def matrix(self, what: str = "bytes") -> np.ndarray:
        """``nranks × nranks``: bytes (``what="bytes"``) or messages (``"messages"``) sent from
        row rank to column rank, counted at the sender (every send with a peer, started
        persistent sends included)."""
        if what not in ("bytes", "messages"):
            raise ValueError(f"what must be 'bytes' or 'messages'; got {what!r}")
        ev = self.events
        started = np.isin(ev["kind"], _STARTS)
        sel = (np.isin(ev["kind"], _SENDS[0]) | (started & np.isin(ev["op"], _SENDS[1])))
        sel &= (ev["peer"] >= 0) & (ev["peer"] < self.nranks)
        out = np.zeros((self.nranks, self.nranks), dtype=np.int64)
        np.add.at(out, (ev["rank"][sel], ev["peer"][sel]), ev["bytes"][sel] if what == "bytes" else 1)
        return out

    def time_per_kind(self) -> dict[int, dict[str, float]]:
        """Seconds each rank spent in each call kind, plus ``"compute"``: the rest of its traced
        region (outside MPI). Collectives and waits include the time spent waiting for others."""
        out: dict[int, dict[str, float]] = {}
        ev = self.events
        for rank in range(self.nranks):
            mine = ev["rank"] == rank
            spent_by_kind = np.bincount(ev["kind"][mine], weights=(ev["t1"] - ev["t0"])[mine], minlength=len(KINDS))
            present = np.bincount(ev["kind"][mine], minlength=len(KINDS)) > 0
            spent = {KINDS[k]: float(spent_by_kind[k]) for k in np.flatnonzero(present)}
            a, b = self.windows[rank] if rank < len(self.windows) else (0.0, 0.0)
            if not b and mine.any():
                a, b = float(ev["t0"][mine].min()), float(ev["t1"][mine].max())
            spent["compute"] = max(0.0, (b - a) - sum(spent.values()))
            out[rank] = spent
        return out

    def overflow(self) -> str | None:
        """What a full buffer cost, in words (``None`` when every call was recorded): per rank
        the calls not recorded, and the capacity that would have held them all."""
        if not any(self.dropped):
            return None
        lost = ", ".join(f"rank {r}: {d}" for r, d in enumerate(self.dropped) if d)
        recorded = np.bincount(self.events["rank"], minlength=self.nranks) if len(self) else np.zeros(self.nranks, int)
        need = max(int(recorded[r]) + int(d) for r, d in enumerate(self.dropped))
        suggest = int(10 ** np.ceil(np.log10(need * 1.25)))
        return (f"the trace buffer was full: calls not recorded ({lost}); the trace holds the first calls only. "
                f"Record again with a larger buffer: wb.trace(capacity={suggest}) in a notebook, "
                f"mpiworkbench trace --capacity {suggest} from the shell, recorder.start({suggest}) in code")

    def summary(self) -> str:
        """One line: calls, duration, calls per rank, messages, communicators beyond
        ``COMM_WORLD`` (and dropped events, if any)."""
        per_rank = ", ".join(f"rank {r}: {int((self.events['rank'] == r).sum())}" for r in range(self.nranks))
        text = f"{len(self)} MPI calls in {self.duration * 1e3:.3f} ms ({per_rank}); {len(self.messages())} messages"
        used = sorted(set(self.events["comm"].tolist()) - {-1})
        if any(u != 0 for u in used):
            text += "; communicators: " + ", ".join(self.comms[u].name for u in used if 0 <= u < len(self.comms))
        if any(self.dropped):
            text += f"; dropped (buffer full): {self.dropped}"
        return text

    def __repr__(self) -> str:
        return f"<Trace of {self.nranks} rank(s): {self.summary()}>"

    # ------------------------------------------------------------------ why is it slow
    def dependencies(self, eager_bytes: int | None = None) -> np.ndarray:
        """Every call's dependencies on other ranks' calls (:func:`mpiworkbench.trace.waits.dependencies`),
        computed once per trace and *eager_bytes* for the analyses below (shared: do not modify)."""
        key = (id(self.events), len(self.events))
        if self._dependencies is None or self._dependencies["key"] != key:
            self._dependencies = {"key": key}
        if eager_bytes not in self._dependencies:
            self._dependencies[eager_bytes] = dependencies(self, eager_bytes)
        return self._dependencies[eager_bytes]

    def wait_states(self, eager_bytes: int | None = None) -> WaitStates:
        """Every waiting interval, classified by Scalasca's patterns (Late Sender, Wait at N×N,
        …), with the waiting and the causing rank, call and Python line:
        :func:`mpiworkbench.trace.waits.wait_states`. *eager_bytes*: count a standard send of at
        least this many bytes as synchronous (sent by rendezvous)."""
        return wait_states(self, self.sites, eager_bytes, deps=self.dependencies(eager_bytes))

    def efficiency(self) -> Efficiency:
        """The POP factors of the traced region (load balance, communication, serialisation and
        transfer efficiency): :func:`mpiworkbench.trace.efficiency.efficiency`."""
        return efficiency(self, self.dependencies())

    def critical_path(self) -> CriticalPath:
        """The path through the message and collective graph that set the run's length, each
        rank's share of it and the call sites on it: :func:`mpiworkbench.trace.critical.critical_path`."""
        return critical_path(self, self.sites, self.dependencies())

    # ------------------------------------------------------------------ export / import
    def to_otf2(self, directory, archive_name: str = "traces"):
        """Write the trace as an OTF2 archive in *directory* (Vampir, Score-P's tools), with its
        :meth:`wait_states` beside it (``wait_states.json``); returns the path of its anchor
        file (``.otf2``). Needs the ``otf2`` extra."""
        return write_otf2(self, directory, archive_name=archive_name, waits=self.wait_states())

    @classmethod
    def from_chrome(cls, data: dict[str, Any]) -> "Trace":
        """The trace back from :meth:`to_chrome`'s JSON (e.g. what ``mpiworkbench trace`` wrote):
        :func:`mpiworkbench.trace.chrome.trace_fields`."""
        return cls(**chrome.trace_fields(data))

    def to_chrome(self) -> dict[str, Any]:
        """The Chrome trace-event format (JSON object form): one process per rank, each call a
        complete event (``X``), each message a flow arrow (``s`` → ``f``). Times in µs.
        :func:`mpiworkbench.trace.chrome.to_chrome`."""
        return chrome.to_chrome(self)


def causal_shifts(messages: np.ndarray, nranks: int) -> list[float] | None:
    """Seconds to add to each rank's clock (as few as it takes, later only) so that every one of
    the *messages* (:meth:`Trace.messages`) is received after it was sent; ``None`` when no such
    shifts exist (a cycle of messages that would each take negative time).

    An estimate of clock offsets (a ping-pong round trip) errs by up to half a round trip, about
    as long as a message across a network takes, so some receives would be drawn before their
    sends. Each message from rank s to rank r asks ``shift[r] - shift[s] >= t_send - t_recv``;
    the smallest shifts that satisfy them all are the longest paths of that constraint graph
    (Bellman-Ford from zero shifts).
    """
    need: dict[tuple[int, int], float] = {}
    for m in messages:
        key = (int(m["src"]), int(m["dst"]))
        need[key] = max(need.get(key, -np.inf), float(m["t_send"] - m["t_recv"]))
    shift = [0.0] * nranks
    for _ in range(nranks + 1):
        changed = False
        for (src, dst), gap in need.items():
            if shift[dst] < shift[src] + gap:
                shift[dst], changed = shift[src] + gap, True
        if not changed:
            return shift
    return None


def _source_of_matched_receives(part: np.ndarray) -> None:
    """An ``MPI_Mrecv`` receives what the ``MPI_Mprobe`` before it matched: give it that
    probe's source, tag and communicator (mpi4py's ``comm.recv`` is an Mprobe then an Mrecv)."""
    probes = np.flatnonzero(part["kind"] == _MPROBE)
    recvs = np.flatnonzero((part["kind"] == _MRECV) & (part["peer2"] < 0))
    if not len(probes) or not len(recvs):
        return
    before = np.searchsorted(probes, recvs) - 1
    ok = before >= 0
    recvs, probe = recvs[ok], probes[before[ok]]
    part["peer2"][recvs] = part["peer2"][probe]
    no_tag = part["tag2"][recvs] < 0
    part["tag2"][recvs[no_tag]] = part["tag2"][probe[no_tag]]
    part["comm"][recvs] = part["comm"][probe]
