"""Tracing from the notebook, and the hang report of a timed-out execution.

``with wb.trace() as t:`` switches the interposer's recording on in every rank, and at the end
gathers the events to rank 0 by MPI and pulls them once: ``t.trace`` is a
:class:`~mpiworkbench.trace.model.Trace`, with the Python lines that made the calls
(``t.trace.sites``: what ``t.trace.wait_states()`` names; ``tracing(wb, lines=False)`` leaves
them out, for timing tight loops of small messages: a line costs more than an event). When the traced code hangs, the events recorded up to
the timeout are read from outside the blocked ranks instead (``t.trace`` again).

:func:`explain_timeout` turns an :class:`~mpiworkbench.client.errors.ExecutionTimeout` into a
hang report: per rank the MPI call it is blocked in (peer, tag, bytes, for how long), its Python
line, and the likely cause.
"""

from __future__ import annotations

import contextlib
import socket
import time
import warnings
from typing import Any, Callable

import numpy as np

from mpiworkbench.client import upstream
from mpiworkbench.client.calls import relayed
from mpiworkbench.client.cluster import leftovers, record
from mpiworkbench.client.ranks import reports
from mpiworkbench.client.history import drop
from mpiworkbench.client.errors import ExecutionTimeout
from mpiworkbench.trace import hang, recorder
from mpiworkbench.trace.model import Trace

#: Seconds to wait for engines to arm their stack dumper (they may be busy with a hung cell).
ARM_TIMEOUT_S = 10.0


class TraceOverflow(UserWarning):
    """A traced block made more MPI calls than the trace buffer holds (the rest were counted)."""


class TraceRecording:
    """What ``with wb.trace() as t`` gives: ``t.trace`` once the block has ended."""

    def __init__(self, wb, capacity: int = recorder.DEFAULT_CAPACITY, lines: bool = True):
        self.wb = wb
        self.capacity = capacity
        self.lines = lines
        self.trace: Trace | None = None
        self.complete = False  # False when taken from outside after a hang

    def __enter__(self) -> "TraceRecording":
        self.wb.run(recorder.start, self.capacity, self.lines)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if isinstance(exc, ExecutionTimeout):
            self.trace = trace_from_outside(self.wb, exc.execution)
            exc.trace = self.trace
            return
        if exc is not None and self.wb.state != "running":
            return
        if exc is not None and getattr(exc, "running", None):
            return  # some ranks are still busy: a collective gather would hang
        self.trace = self.wb.run(recorder.finish_world)[0]
        self.complete = True
        overflow = self.trace.overflow() if self.trace is not None else None
        if overflow:
            warnings.warn(overflow, TraceOverflow, stacklevel=2)

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self.trace) if self.trace is not None else "<trace not finished>")


def tracing(wb, capacity: int = recorder.DEFAULT_CAPACITY, lines: bool = True) -> TraceRecording:
    """``with tracing(wb) as t: …`` — see :meth:`mpiworkbench.Workbench.trace`. *lines*: record
    the Python lines of the calls too (``t.trace.sites``)."""
    return TraceRecording(wb, capacity, lines)


# ---------------------------------------------------------------------- hang report
#: The file of the world's directory where :func:`arm_engines` records each rank's process: rank →
#: ``{pid, host, started}`` (what the lab's world sidebar, :mod:`mpiworkbench.sidebar.worlds`, reads).
RANK_PROCESSES = "processes.json"


def arm_engines(connection) -> dict[int, dict[str, Any]]:
    """Arm the stack dumper of every engine of a session's *connection*: rank → ``{pid, host,
    interposer, started, files}``. Called once per engine set, holding the world's turn (every
    engine set is taken with a view of its own: ``connection.armed_for`` is the view armed). The
    ranks also remove what ranks killed before them on their hosts left in ``/dev/shm``
    (:func:`mpiworkbench.client.cluster.leftovers.elsewhere`)."""
    left_behind = leftovers.elsewhere()
    # ranks on other hosts than this client's are read through what they publish; with every
    # rank here (the usual case) their trace events are read from /dev/shm instead
    here = socket.gethostname()
    hosts = set((connection.hosts or {}).values())
    ar = connection.view.apply_async(reports.arm_engine, left_behind, hosts != {here})
    processes: dict[int, dict[str, Any]] = {}
    if ar.wait(ARM_TIMEOUT_S):
        targets = upstream.targets(ar) or list(connection.ranks)
        infos = dict(zip(targets, ar.get()))
        for engine, info in infos.items():
            rank = info["rank"] if info["rank"] is not None else connection.ranks.get(engine, engine)
            processes[rank] = info
        drop(ar, (connection.client.history, connection.view.history))
        leftovers.remember_armed(connection.client, infos)
        leftovers.handed_over(left_behind, {info["host"] for info in infos.values()})
        connection.armed_for = connection.view
    connection.rank_processes = processes
    if connection.turns is not None:  # for readers outside the notebook (the lab's world sidebar)
        record.write_json_atomic(connection.turns.directory / RANK_PROCESSES, {str(rank): {
            key: info.get(key) for key in ("pid", "host", "started")} for rank, info in processes.items()})
    return processes


#: Seconds a hang report waits for the reports of ranks on other hosts
#: (:data:`mpiworkbench.trace.hang.REPORT_AFTER_S` after a rank got stuck, plus the way here).
REPORT_WAIT_S = 2.0


def _rank_states(wb, statuses, since: float | None, ar=None) -> list[hang.RankState]:
    """What the hang report knows of each rank: read from its slot and stack here when it runs
    on this host, else what its reporter thread published with the execution *ar*."""
    processes = getattr(wb, "_rank_processes", {}) or {}
    here = socket.gethostname()
    remote = {s.rank for s in statuses if s.state == "running"
              and (processes.get(s.rank) or {}).get("host", here) != here}
    reports = published(wb, ar, remote)
    states = []
    for status in statuses:
        info = processes.get(status.rank)
        local = info is not None and info.get("host") == here
        inflight, stack = None, []
        if local:
            inflight = hang.read_slot(info["pid"], since)
            stack = hang.python_stack(info["pid"], started=info.get("started")) if status.state == "running" else []
        elif status.rank in reports and status.state == "running":
            inflight, stack = hang.from_report(reports[status.rank],
                                               None if since is None else time.monotonic() - since)
        host = (info or {}).get("host") or getattr(wb, "hosts", {}).get(status.rank, "")
        states.append(hang.RankState(status.rank, status.state, status.error, inflight, stack, host))
    return states


def published(wb, ar, wanted: set[int] = frozenset(), timeout: float = REPORT_WAIT_S,
              key: str = hang.REPORT_KEY) -> dict[int, dict[str, Any]]:
    """Rank → the in-flight report its engine published during the execution *ar*
    (:func:`mpiworkbench.trace.hang.report`: ranks blocked in an MPI call on any host; with
    *key* ``EVENTS_KEY`` their trace events, :func:`~mpiworkbench.trace.hang.events_report`);
    waits up to *timeout* seconds for the ranks *wanted* (a rank that just got stuck has not yet)."""
    if ar is None:
        return {}
    deadline = time.monotonic() + timeout
    while True:
        found = _published(wb, ar, key)
        if wanted <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _published(wb, ar, key: str = hang.REPORT_KEY) -> dict[int, dict[str, Any]]:
    # the execution's own metadata (what the client's IOPub handler updates) and the client's
    # table: that one may have handed its entries over to the result already, and what a rank
    # publishes after its part has finished (a rank that failed, then waits) lands in a new one
    metadata = upstream.metadata(ar)
    metadata += [wb.client.metadata.get(m) for m in getattr(ar, "msg_ids", ())]
    # a call on every rank (wb.run: relayed by rank 0): each rank's copy of it has an id of its own
    metadata += [wb.client.metadata.get(m) for m in relayed.copies(wb.client, ar)]
    found = {}
    for md in metadata:
        report = ((md or {}).get("data") or {}).get(key)
        if report is not None:
            found.setdefault(int(report["rank"]), report)
    return found


def explain_timeout(wb, exc: ExecutionTimeout, call=None) -> ExecutionTimeout:
    """Add the hang report to *exc* (rank by rank: the blocked call, peer, tag, bytes, for how
    long, the Python line; then the likely causes) and return it. With the
    :class:`~mpiworkbench.client.calls.call.Call` that timed out: only what the ranks did since it
    was submitted counts, and the report says which notebook it came from, and whose other work
    is on the same ranks. ``exc.execution`` is its ipyparallel ``AsyncResult``."""
    ar = call.ar if call is not None else None
    since = call.submitted if call is not None else None
    exc.execution = ar
    try:
        states = _rank_states(wb, exc.statuses, since, ar)
    except Exception as err:  # the report must never hide the timeout itself
        exc.attach_hang_report([f"  (no hang report: {type(err).__name__}: {err})"], [], [])
        return exc
    lines = hang.report_lines(states)
    if not any(s.inflight for s in states):
        lines.append("  (no in-flight records: the engines run without the interposer, e.g. a cluster "
                     "started elsewhere, or were not armed)")
    causes = hang.diagnose(states)
    world = getattr(wb, "_turns", None)
    if world is not None and ar is not None:
        lines.append(f"  this call came from {world.me.who()}: {call.label or 'a call'}")
        with contextlib.suppress(Exception):  # the report must never hide the timeout itself
            crossed = other_clients_work(wb, ar)
            lines += crossed
            if crossed:
                causes.insert(0, "another client's work is on the ranks beside this call: their calls "
                                 "crossed (only clients outside the workbench can do that: a bare "
                                 "ipyparallel Client or %px of its own is not ordered with the workbench's calls)")
    exc.attach_hang_report(lines, causes, states)
    return exc


def other_clients_work(wb, ar) -> list[str]:
    """Report lines naming the work of *other* clients still queued or running on the engines of
    *ar* (from the controller's queues and task records): the notebook it came from when it is
    a workbench's, else the ipyparallel session of a client outside the workbench."""
    mine = set(getattr(ar, "msg_ids", []) or [])
    queues = wb.client.queue_status(targets=list(wb.ranks), verbose=True)
    foreign = {engine: others for engine, entry in queues.items() if isinstance(entry, dict)
               if (others := [m for m in (entry.get("queue") or []) if m not in mine])}
    ids = sorted({m for ms in foreign.values() for m in ms})
    if not ids:
        return []
    records = {r["msg_id"]: r for r in wb.client.db_query({"msg_id": {"$in": ids}}, keys=["client_uuid"])}
    own = wb.client.session.session  # this notebook's other calls (the hang probes among them) are not another client's
    lines = []
    for engine, msg_ids in sorted(foreign.items(), key=lambda kv: wb.ranks.get(kv[0], kv[0])):
        msg_ids = [m for m in msg_ids if (records.get(m) or {}).get("client_uuid") != own]
        if not msg_ids:
            continue
        owners_ = []
        for msg_id in msg_ids:
            session = (records.get(msg_id) or {}).get("client_uuid", "")
            client = wb._turns.session_of(session) if session else None
            owners_.append(f"{client['notebook']} (pid {client['pid']})" if client else
                           f"a client outside the workbench (ipyparallel session {session[:8] or '?'})")
        lines.append(f"  rank {wb.ranks.get(engine, engine)} also has {len(msg_ids)} call(s) of "
                     f"{', '.join(sorted(set(owners_)))} queued or running")
    return lines


def trace_from_outside(wb, ar=None) -> Trace | None:
    """The events each rank recorded so far, while the world hangs (it cannot gather): read
    from shared memory for the ranks on this host, and for the ranks on other hosts taken from
    what their reporter threads published with the hung execution *ar*
    (:func:`mpiworkbench.trace.hang.events_report`). One host's ranks share one clock; with
    several hosts every rank's events are put on its host's wall clock, and then corrected so
    that no message is received before it was sent. ``None`` when a rank's events are missing."""
    processes = getattr(wb, "_rank_processes", {}) or {}
    if not processes:
        return None
    here = socket.gethostname()
    remote = {rank for rank, p in processes.items() if p.get("host") != here}
    reports = published(wb, ar, remote, key=hang.EVENTS_KEY) if remote else {}
    if not remote <= set(reports):
        return None
    per_rank, open_last, offsets, hosts = [], [], [], []
    for rank in sorted(processes):
        data = reports[rank] if rank in remote else hang.events_so_far(processes[rank]["pid"])
        if data is None:
            return None
        per_rank.append(np.asarray(data["events"]))
        open_last.append(bool(data["open_last"]))
        # several hosts: every rank's clock put on the wall clock (its host's offset to it)
        offsets.append(float(data["monotonic"]) - float(data["wall"]) if remote else 0.0)
        hosts.append(processes[rank].get("host", here))
    return Trace.from_ranks(per_rank, offsets=offsets, hosts=hosts, open_last=open_last, causal=bool(remote))


def trace_steps(wb, advance: Callable[[int], Any], steps: int) -> Trace | None:
    """``advance(steps)`` with every rank's MPI calls recorded: what ``w.trace(steps=3)`` of
    the solver handles does. Returns the :class:`~mpiworkbench.trace.model.Trace`."""
    if int(steps) < 1:
        raise ValueError(f"steps must be at least 1; got {steps}")
    with tracing(wb) as t:
        advance(int(steps))
    return t.trace
