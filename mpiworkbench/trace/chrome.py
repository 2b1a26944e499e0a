"""A :class:`~mpiworkbench.trace.model.Trace` as Chrome trace-event JSON (Perfetto,
``chrome://tracing``), and back.

The JSON object form: one process per rank (named ``rank i (host)``), each call a complete event
(``X``) with its arguments, each matched message a flow arrow (``s`` → ``f``), times in µs;
``otherData`` keeps what the events cannot say: the clock offsets, the calls dropped, the
communicators, each rank's traced region (``windows_s``: the analysis measures time from it) and the Python lines of the calls (``call_sites``, when recorded). :meth:`Trace.to_chrome <mpiworkbench.trace.model.Trace.to_chrome>` and
:meth:`Trace.from_chrome <mpiworkbench.trace.model.Trace.from_chrome>` hand over to
:func:`to_chrome` and :func:`trace_fields`: this module gives the fields, the class builds the
trace, so the model imports this module and not the other way round.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mpiworkbench.trace.communicators import Communicator
from mpiworkbench.trace.events import COLLECTIVES, KIND, STARTS, TRACE_DTYPE, family, kind_name
from mpiworkbench.trace.sites import CallSites


def to_chrome(trace) -> dict[str, Any]:
    """*trace* (a :class:`~mpiworkbench.trace.model.Trace`) in the Chrome trace-event format
    (JSON object form): one process per rank, each call a complete event (``X``), each message a
    flow arrow (``s`` → ``f``). Times in µs."""
    out: list[dict[str, Any]] = []
    for rank in range(trace.nranks):
        host = trace.hosts[rank] if rank < len(trace.hosts) else ""
        out.append({"ph": "M", "name": "process_name", "pid": rank, "tid": 0,
                    "args": {"name": f"rank {rank}" + (f" ({host})" if host else "")}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": rank, "tid": 0, "args": {"sort_index": rank}})
    names = [c.name for c in trace.comms]
    for e in trace.events:
        kind = int(e["kind"])
        name = kind_name(kind)
        fam = family(name)
        args: dict[str, Any] = {"bytes": int(e["bytes"])}
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
        if 0 <= e["comm"] < len(names):
            args["comm"] = names[int(e["comm"])]
        if e["req"] >= 0:
            args["request"] = int(e["req"])
        if e["op"] >= 0:
            args["starts" if kind in STARTS else "requests"] = kind_name(int(e["op"])) if kind in STARTS else int(e["op"])
        if e["count"] != 1:
            args["count"] = int(e["count"])
        if e["aux"] >= 0:
            args["partition"] = int(e["aux"])
        cat = {"send": "p2p", "receive": "p2p", "sendrecv": "p2p", "probe": "p2p", "wait": "p2p", "test": "p2p",
               "barrier": "collective"}.get(fam, fam)
        out.append({"ph": "X", "name": name, "cat": cat,
                    "pid": int(e["rank"]), "tid": 0, "ts": float(e["t0"]) * 1e6,
                    "dur": max(float(e["t1"] - e["t0"]) * 1e6, 0.001), "args": args})
    for i, m in enumerate(trace.messages()):
        common = {"name": "message", "cat": "message", "id": i, "tid": 0}
        out.append({**common, "ph": "s", "pid": int(m["src"]), "ts": float(m["t_send"]) * 1e6})
        out.append({**common, "ph": "f", "bp": "e", "pid": int(m["dst"]), "ts": float(m["t_recv"]) * 1e6,
                    "args": {"bytes": int(m["bytes"]), "tag": int(m["tag"])}})
    comms = [{"id": c.id, "name": c.name, "ranks": list(c.ranks), "kind": c.kind, "parent": c.parent}
             for c in trace.comms]
    other = {"producer": "mpiworkbench", "clock_offsets_s": list(map(float, trace.offsets)),
             "dropped": list(map(int, trace.dropped)), "communicators": comms,
             "windows_s": [[float(a), float(b)] for a, b in trace.windows]}
    if getattr(trace, "sites", None) is not None:
        other["call_sites"] = trace.sites.to_dict()
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": other}


def trace_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of the :class:`~mpiworkbench.trace.model.Trace` that :func:`to_chrome` wrote as
    *data* (e.g. what ``mpiworkbench trace`` wrote): its constructor's keyword arguments."""
    calls = [e for e in data["traceEvents"] if e.get("ph") == "X" and e.get("name") in KIND]
    names = {e["pid"]: e["args"]["name"] for e in data["traceEvents"] if e.get("name") == "process_name"}
    nranks = max([e["pid"] for e in calls] + list(names), default=-1) + 1
    other = data.get("otherData", {})
    comms = [Communicator(int(c["id"]), c["name"], tuple(c.get("ranks", ())), c.get("kind", "seen"), c.get("parent"))
             for c in other.get("communicators", [])]
    by_name = {c.name: c.id for c in comms}
    events = np.zeros(len(calls), TRACE_DTYPE)
    for row, e in zip(events, sorted(calls, key=lambda e: (e["pid"], e["ts"]))):
        args = e.get("args", {})
        row["rank"], row["kind"] = e["pid"], KIND[e["name"]]
        row["t0"], row["t1"] = e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6
        row["t_done"] = args.get("done_us", 0.0) / 1e6
        row["peer"] = args.get("peer", args.get("root", -1))
        row["tag"], row["bytes"] = args.get("tag", -3), args.get("bytes", 0)
        row["peer2"], row["tag2"] = args.get("source", -3), args.get("recv_tag", -3)
        row["comm"] = by_name.get(args.get("comm"), 0 if "comm" not in args else -1)
        row["req"], row["count"], row["aux"] = args.get("request", -1), args.get("count", 1), args.get("partition", -1)
        row["op"] = KIND.get(args.get("starts"), args.get("requests", -1))
    hosts = [names.get(r, "").partition("(")[2].rstrip(")") for r in range(nranks)]
    return {"events": events, "nranks": nranks, "hosts": hosts,
            "offsets": list(other.get("clock_offsets_s", [0.0] * nranks)),
            "estimated_offsets": list(other.get("clock_offsets_s", [0.0] * nranks)),
            "dropped": list(other.get("dropped", [0] * nranks)),
            "windows": [tuple(w) for w in other.get("windows_s", [(0.0, 0.0)] * nranks)], "comms": comms,
            "sites": CallSites.from_dict(other["call_sites"]) if "call_sites" in other else None}


def write_chrome(trace, path: str | Path) -> Path:
    """Write *trace* as Chrome trace-event JSON (open it in Perfetto or ``chrome://tracing``)."""
    path = Path(path)
    path.write_text(json.dumps(to_chrome(trace)))
    return path
