"""A gathered trace: every rank's MPI calls on one clock, and what can be read from them —
the messages (each send matched to its receive), the communication matrix, the time per call
kind, a window of it, and the Chrome trace-event JSON that Perfetto and ``chrome://tracing`` open.

Pure NumPy, no MPI: rank 0 builds it, the notebook plots it, the CLI writes it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpiworkbench.trace.events import (
    COLLECTIVES, EVENT_DTYPE, KIND, KINDS, RECEIVES, SENDS, TRACE_DTYPE, kind_name,
)

#: A matched message: send on ``src`` at ``t_send`` → receive completed on ``dst`` at ``t_recv``.
MESSAGE_DTYPE = np.dtype([
    ("src", "i4"), ("dst", "i4"), ("tag", "i4"), ("bytes", "i8"),
    ("t_send", "f8"), ("t_recv", "f8"), ("send", "i8"), ("recv", "i8"),
])
_MRECV, _MPROBE, _IRECV = KIND["MPI_Mrecv"], KIND["MPI_Mprobe"], KIND["MPI_Irecv"]


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
    """

    events: np.ndarray
    nranks: int
    hosts: list[str] = field(default_factory=list)
    offsets: list[float] = field(default_factory=list)
    estimated_offsets: list[float] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    windows: list[tuple[float, float]] = field(default_factory=list)
    unfinished: list[int] = field(default_factory=list)

    @classmethod
    def from_ranks(cls, per_rank: list[np.ndarray], offsets=None, estimated_offsets=None, hosts=None,
                   dropped=None, windows=None, open_last=None, causal: bool = False) -> "Trace":
        """Combine each rank's raw events (``EVENT_DTYPE``, the rank's own clock); *open_last*
        says per rank whether its last event is a call that had not returned yet. With *causal*
        (clocks of several hosts, *offsets* estimated), the offsets are then corrected so that
        no message is received before it was sent (:func:`causal_shifts`)."""
        n = len(per_rank)
        offsets = list(offsets) if offsets is not None else [0.0] * n
        windows = list(windows) if windows is not None else [(0.0, 0.0)] * n
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
            windows=[(a - origin, b - origin) for a, b in shifted], unfinished=unfinished,
        )
        shift = causal_shifts(trace.messages(), n) if causal else None
        if not shift or not any(shift):
            return trace
        return cls.from_ranks(per_rank, [o - d for o, d in zip(offsets, shift)], trace.estimated_offsets,
                              hosts, dropped, windows, open_last)

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

    def count(self, kind: str, rank: int | None = None) -> int:
        """How many calls of *kind* (e.g. ``"MPI_Send"``) the trace holds, on *rank* or on all ranks."""
        sel = self.events["kind"] == KIND[kind]
        if rank is not None:
            sel &= self.events["rank"] == rank
        return int(sel.sum())

    def window(self, t0: float, t1: float) -> "Trace":
        """The calls that overlap ``[t0, t1]`` (zoom to a step); times stay on the same axis."""
        ev = self.events
        keep = (ev["t1"] >= t0) & (ev["t0"] <= t1)
        new_index = np.cumsum(keep) - 1
        return Trace(ev[keep].copy(), self.nranks, self.hosts, self.offsets, self.estimated_offsets,
                     self.dropped, [(max(a, t0), min(b, t1)) for a, b in self.windows],
                     [int(new_index[i]) for i in self.unfinished if keep[i]])

    def messages(self) -> np.ndarray:
        """Every point-to-point message, each send matched to its receive.

        MPI does not let messages overtake: between one sender and one receiver, with one tag,
        the k-th send is received by the k-th matching receive. Receives by any source are
        placed by the source they actually got. (Tags are compared, communicators are not.)
        A send without a recorded receive (or the reverse) is left out.
        """
        ev = self.events
        sends: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        recvs: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        for i in range(len(ev)):
            kind = int(ev["kind"][i])
            if kind in SENDS and ev["peer"][i] >= 0:
                sends[(int(ev["rank"][i]), int(ev["peer"][i]), int(ev["tag"][i]))].append(i)
            if kind in RECEIVES and ev["peer2"][i] >= 0:
                recvs[(int(ev["peer2"][i]), int(ev["rank"][i]), int(ev["tag2"][i]))].append(i)
        rows = []
        for key, s_idx in sends.items():
            r_idx = sorted(recvs.get(key, []), key=lambda i: ev["t0"][i])
            for s, r in zip(sorted(s_idx, key=lambda i: ev["t0"][i]), r_idx):
                t_recv = ev["t_done"][r] if ev["kind"][r] == _IRECV and ev["t_done"][r] else ev["t1"][r]
                rows.append((key[0], key[1], key[2], ev["bytes"][s], ev["t0"][s], t_recv, s, r))
        out = np.array(rows, dtype=MESSAGE_DTYPE) if rows else np.zeros(0, MESSAGE_DTYPE)
        return np.sort(out, order=["t_send", "src", "dst"])

    def matrix(self, what: str = "bytes") -> np.ndarray:
        """``nranks × nranks``: bytes (``what="bytes"``) or messages (``"messages"``) sent from
        row rank to column rank, counted at the sender (every send with a peer)."""
        if what not in ("bytes", "messages"):
            raise ValueError(f"what must be 'bytes' or 'messages'; got {what!r}")
        out = np.zeros((self.nranks, self.nranks), dtype=np.int64)
        ev = self.events
        for i in range(len(ev)):
            if int(ev["kind"][i]) in SENDS and 0 <= ev["peer"][i] < self.nranks:
                out[ev["rank"][i], ev["peer"][i]] += ev["bytes"][i] if what == "bytes" else 1
        return out

    def time_per_kind(self) -> dict[int, dict[str, float]]:
        """Seconds each rank spent in each call kind, plus ``"compute"``: the rest of its traced
        region (outside MPI). Collectives and waits include the time spent waiting for others."""
        out: dict[int, dict[str, float]] = {}
        for rank in range(self.nranks):
            ev = self.of_rank(rank)
            spent: dict[str, float] = defaultdict(float)
            for kind, t0, t1 in zip(ev["kind"], ev["t0"], ev["t1"]):
                spent[KINDS[kind]] += float(t1 - t0)
            a, b = self.windows[rank] if rank < len(self.windows) else (0.0, 0.0)
            if not b and len(ev):
                a, b = float(ev["t0"].min()), float(ev["t1"].max())
            spent["compute"] = max(0.0, (b - a) - sum(spent.values()))
            out[rank] = dict(spent)
        return out

    def summary(self) -> str:
        """One line: calls, duration, calls per rank, messages (and dropped events, if any)."""
        per_rank = ", ".join(f"rank {r}: {int((self.events['rank'] == r).sum())}" for r in range(self.nranks))
        text = f"{len(self)} MPI calls in {self.duration * 1e3:.3f} ms ({per_rank}); {len(self.messages())} messages"
        if any(self.dropped):
            text += f"; dropped (buffer full): {self.dropped}"
        return text

    def __repr__(self) -> str:
        return f"<Trace of {self.nranks} rank(s): {self.summary()}>"

    # ------------------------------------------------------------------ export / import
    @classmethod
    def from_chrome(cls, data: dict[str, Any]) -> "Trace":
        """The trace back from :meth:`to_chrome`'s JSON (e.g. what ``mpiworkbench trace`` wrote)."""
        calls = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("name") in KIND]
        names = {e["pid"]: e["args"]["name"] for e in data["traceEvents"] if e.get("name") == "process_name"}
        nranks = max([e["pid"] for e in calls] + list(names), default=-1) + 1
        events = np.zeros(len(calls), TRACE_DTYPE)
        for row, e in zip(events, sorted(calls, key=lambda e: (e["pid"], e["ts"]))):
            args = e.get("args", {})
            row["rank"], row["kind"] = e["pid"], KIND[e["name"]]
            row["t0"], row["t1"] = e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6
            row["t_done"] = args.get("done_us", 0.0) / 1e6
            row["peer"] = args.get("peer", args.get("root", -1))
            row["tag"], row["bytes"] = args.get("tag", -3), args.get("bytes", 0)
            row["peer2"], row["tag2"] = args.get("source", -3), args.get("recv_tag", -3)
        hosts = [names.get(r, "").partition("(")[2].rstrip(")") for r in range(nranks)]
        other = data.get("otherData", {})
        return cls(events, nranks, hosts, list(other.get("clock_offsets_s", [0.0] * nranks)),
                   list(other.get("clock_offsets_s", [0.0] * nranks)), list(other.get("dropped", [0] * nranks)),
                   [(0.0, 0.0)] * nranks)

    def to_chrome(self) -> dict[str, Any]:
        """The Chrome trace-event format (JSON object form): one process per rank, each call a
        complete event (``X``), each message a flow arrow (``s`` → ``f``). Times in µs."""
        out: list[dict[str, Any]] = []
        for rank in range(self.nranks):
            host = self.hosts[rank] if rank < len(self.hosts) else ""
            out.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
                        "args": {"name": f"rank {rank}" + (f" ({host})" if host else "")}})
            out.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
        for e in self.events:
            kind = int(e["kind"])
            args = {"bytes": int(e["bytes"])}
            if e["peer"] >= 0 or e["peer"] == -2:  # a rank, or -2: any source
                args["root" if kind in COLLECTIVES else "peer"] = int(e["peer"])
            if e["tag"] != -3:  # a tag, or -1: any tag
                args["tag"] = int(e["tag"])
            if e["peer2"] >= 0:
                args["source"] = int(e["peer2"])
            if e["tag2"] >= 0:
                args["recv_tag"] = int(e["tag2"])
            if e["t_done"]:
                args["done_us"] = float(e["t_done"]) * 1e6
            out.append({"ph": "X", "name": kind_name(kind), "cat": "collective" if kind in COLLECTIVES else "p2p",
                        "pid": int(e["rank"]), "tid": 0, "ts": float(e["t0"]) * 1e6,
                        "dur": max(float(e["t1"] - e["t0"]) * 1e6, 0.001), "args": args})
        for i, m in enumerate(self.messages()):
            common = {"name": "message", "cat": "message", "id": i, "tid": 0}
            out.append({**common, "ph": "s", "pid": int(m["src"]), "ts": float(m["t_send"]) * 1e6})
            out.append({**common, "ph": "f", "bp": "e", "pid": int(m["dst"]), "ts": float(m["t_recv"]) * 1e6,
                        "args": {"bytes": int(m["bytes"]), "tag": int(m["tag"])}})
        return {"traceEvents": out, "displayTimeUnit": "ms",
                "otherData": {"producer": "mpiworkbench", "clock_offsets_s": list(map(float, self.offsets)),
                              "dropped": list(map(int, self.dropped))}}


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
    probe's source (mpi4py's ``comm.recv`` is an Mprobe then an Mrecv)."""
    source, tag = -3, -3
    for i in range(len(part)):
        if part["kind"][i] == _MPROBE:
            source, tag = int(part["peer2"][i]), int(part["tag2"][i])
        elif part["kind"][i] == _MRECV and part["peer2"][i] < 0:
            part["peer2"][i] = source
            if part["tag2"][i] < 0:
                part["tag2"][i] = tag
