"""Where is each rank stuck? Read from outside the blocked processes, and the likely cause.

A rank blocked inside MPI runs no Python on its main thread, so nothing can be asked of it.
Two things can still be read from another process on the same host:

* its **in-flight record** — the interposer's shared-memory slot
  (``/dev/shm/mpiworkbench-<pid>.slot``): the MPI call it is in, peer, tag, bytes, since when,
  and its last few sends (tracing on or off);
* its **Python stack** — :func:`arm` registers :mod:`faulthandler` on ``SIGUSR2`` in the rank
  beforehand; :func:`python_stack` sends the signal, and faulthandler writes every thread's
  stack from the signal handler, which runs even while the rank sits in an MPI call.

On another host, nobody can read them; so the rank reports them itself: :func:`arm` starts a
**reporter** thread (mpi4py releases the GIL inside blocking MPI calls, so it runs while the
main thread waits) that, once the rank has been inside one MPI call for
:data:`REPORT_AFTER_S`, publishes the record and the main thread's Python stack (again every
:data:`REPORT_PERIOD_S` while it stays there) through the engine's IOPub channel (ipyparallel's ``data_message``,
attached to the request being run): :func:`published` reads it back on the client.

:func:`diagnose` names the usual causes from those records: a rank raised before a collective,
a send–send deadlock, a receive with a tag nobody sent — and a rank that is merely *late*: it has
been computing (outside MPI) while others wait for it in a collective or a receive from it, which
is not a deadlock. No MPI, no ipyparallel here.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field, fields

import numpy as np

from mpiworkbench.core import shm, yielding
from mpiworkbench.core.threads import start_daemon
from mpiworkbench.trace.events import (
    ANY_SOURCE, ANY_TAG, COLLECTIVES, EVENT_DTYPE, KIND, MAGIC, SLOT_DTYPE, kind_name,
)
from mpiworkbench.trace.late import BLOCKING_RECEIVES, BLOCKING_SENDS, late_ranks
from mpiworkbench.trace import stops
from mpiworkbench.trace.stacks import (  # noqa: F401 (hang.python_stack …)
    STACK_SIGNAL, main_stack, open_for_dumps, python_stack, stack_path, user_line,
)

#: Seconds a rank must have been inside one MPI call before its reporter publishes it.
REPORT_AFTER_S = 0.2
#: Seconds between two looks of the reporter at its rank's slot.
REPORT_POLL_S = 0.1
#: Seconds between two publications of one blocked call (its duration grows meanwhile).
REPORT_PERIOD_S = 1.0
#: Key of the reporter's record in the request's published data (``AsyncResult.data``).
REPORT_KEY = "mpiworkbench_inflight"
#: Key of the reporter's copy of the rank's trace events (:func:`events_report`).
EVENTS_KEY = "mpiworkbench_events"
#: Seconds a recording rank must have been still (stuck in one call, or idle) before its
#: reporter publishes the events it recorded so far (once per change).
EVENTS_AFTER_S = 1.0


def slot_path(pid: int) -> str:
    return f"/dev/shm/mpiworkbench-{pid}.slot"


def events_path(pid: int) -> str:
    return f"/dev/shm/mpiworkbench-{pid}.events"


def interposer_paths(pid: int) -> list[str]:
    """Every file the interposer and :func:`arm` may keep for process *pid* (the trace buffer
    only once tracing has started)."""
    return [slot_path(pid), events_path(pid), stack_path(pid), stops.stop_path(pid)]


_armed: dict[str, object] = {}


def arm(left_behind: list[dict] | None = None, publisher=None, publish_events: bool = False) -> dict:
    """In a rank: let :func:`python_stack` read this process's Python stack later. Returns
    what a reader needs: ``pid``, ``host``, ``rank`` and whether the interposer is loaded, and
    what removing this process's ``/dev/shm`` files after its death needs: ``started`` and
    ``files`` (:func:`mpiworkbench.core.shm.footprint`).

    *left_behind*: footprints of ranks of a world killed before this one; those of this host
    whose processes have ended leave their files to be removed here
    (:func:`mpiworkbench.core.shm.remove_left_behind`; other hosts' are skipped).

    *publisher*: something with ``publish_data(dict)`` (an ipyparallel engine's data publisher,
    which sends on the request being run): starts the reporter thread that publishes this rank's
    in-flight record while it is stuck in MPI (:func:`report`), for readers on other hosts.
    With *publish_events* (a world spanning several hosts), while a trace records it also
    publishes the events recorded so far once the rank has been still for
    :data:`EVENTS_AFTER_S` (:func:`events_report`): what a hung world's trace is made of there.
    """
    import atexit
    import faulthandler

    pid = os.getpid()
    if _armed.get("pid") != pid:
        sweep_stale()
        stream = open_for_dumps(pid)
        faulthandler.register(STACK_SIGNAL, file=stream, all_threads=True, chain=False)
        atexit.register(_remove, stack_path(pid))
        _armed.update(pid=pid, stream=stream)
    if publisher is not None and _armed.get("reporter") != pid:
        _start_reporter(pid, publisher)
        _armed["reporter"] = pid
    _armed["publish_events"] = bool(publish_events)
    if left_behind:
        shm.remove_left_behind(left_behind, also=interposer_paths)
    record = read_slot(pid)
    return {**shm.footprint(pid), "rank": None if record is None else record.rank, "interposer": record is not None}


def report(pid: int, state=None) -> dict | None:
    """What a reader on another host needs of this rank's in-flight record (:func:`from_report`
    turns it back): ``None`` unless it has been inside one MPI call for :data:`REPORT_AFTER_S`.
    Send times become ages (each host has its own monotonic clock). *state*: the slot already read."""
    record = read_slot(pid, state=state)
    if record is None or record.call is None or record.seconds < REPORT_AFTER_S:
        return None
    now = time.clock_gettime(time.CLOCK_MONOTONIC)
    values = {f.name: getattr(record, f.name) for f in fields(InFlight) if f.name != "sent"}
    return {**values, "sent_ages": [(d, t, b, now - when) for d, t, b, when in record.sent],
            "stack": main_stack()}


def from_report(data: dict, since_s: float | None = None) -> tuple["InFlight", list[str]]:
    """The :class:`InFlight` record and stack of a :func:`report` read on another host; keep
    only the sends of the last *since_s* seconds (``None``: all)."""
    now = time.clock_gettime(time.CLOCK_MONOTONIC)
    sent = [(int(d), int(t), int(b), now - float(age)) for d, t, b, age in data.get("sent_ages", ())
            if since_s is None or float(age) <= since_s]
    values = {f.name: data[f.name] for f in fields(InFlight) if f.name not in ("sent", "comm", "outside")}
    values["comm"], values["outside"] = data.get("comm", -1), data.get("outside", 0.0)
    return InFlight(**values, sent=sent), list(data.get("stack", ()))


def events_so_far(pid: int) -> dict | None:
    """What *pid* recorded up to now, read from outside (``None`` without a slot): ``events``
    (``EVENT_DTYPE``; the call it is stuck in, if any, appended as unfinished: ``open_last``),
    its ``rank``, whether it is ``recording``, and this host's ``monotonic`` and ``wall``
    clocks at this moment (the events are on the monotonic clock; ``monotonic - wall`` is the
    offset that puts them on the wall clock, shared by the hosts of a cluster)."""
    state = _slot_state(pid)
    if state is None:
        return None
    events = read_events(pid, state)
    record = read_slot(pid, state=state)
    open_last = record.call is not None
    if open_last:
        events = np.append(events, np.array([record.as_event()], dtype=events.dtype))
    return {"rank": int(state["rank"]), "recording": bool(state["on"]), "events": events, "open_last": open_last,
            "monotonic": time.clock_gettime(time.CLOCK_MONOTONIC), "wall": time.time()}


def events_report(pid: int) -> dict | None:
    """:func:`events_so_far` for a reader on another host, ``None`` when *pid* does not record."""
    data = events_so_far(pid)
    return data if data is not None and data["recording"] else None


def _slot_state(pid: int):
    """The raw slot of *pid* (``SLOT_DTYPE``), or ``None``."""
    try:
        with open(slot_path(pid), "rb") as f:
            raw = f.read(SLOT_DTYPE.itemsize)
    except OSError:
        return None
    if len(raw) < SLOT_DTYPE.itemsize:
        return None
    s = np.frombuffer(raw, SLOT_DTYPE)[0]
    return s if int(s["magic"]) == MAGIC and int(s["pid"]) == pid else None


def _start_reporter(pid: int, publisher) -> None:
    try:
        after_s = yielding.yield_after_s()
    except ValueError:  # (refused by the client before any rank started; set since by hand)
        after_s = yielding.YIELD_AFTER_S
    waiting = None if after_s is None else yielding.WhileWaiting(after_s)

    def watch() -> None:
        last_call, last_at = None, 0.0
        last_events, still, still_since = None, None, time.monotonic()
        while True:
            time.sleep(yielding.YIELDING_POLL_S if waiting is not None and waiting.yielding else REPORT_POLL_S)
            try:
                now = time.monotonic()
                s = _slot_state(pid)  # one read of the slot per look
                inside = s is not None and int(s["depth"]) > 0  # in an MPI call
                if waiting is not None:  # a long wait yields the rank's core (core/yielding.py)
                    waiting.look(inside, now - float(s["since"]) if inside else 0.0)
                if _armed.get("publish_events"):
                    # (calls made, events recorded, recording): unchanged = the rank is still
                    state = None if s is None else (int(s["calls"]), int(s["nevents"]), int(s["on"]))
                    if state != still:
                        still, still_since = state, now
                    elif state and state[2] and state != last_events and now - still_since >= EVENTS_AFTER_S:
                        data = events_report(pid)
                        if data is not None:
                            publisher.publish_data({EVENTS_KEY: data})
                        last_events = state
                if inside and int(s["calls"]) == last_call and now - last_at < REPORT_PERIOD_S:
                    continue  # this call was published lately (its stack is not read again before the period)
                data = None if s is None else report(pid, s)
                if data is None:
                    last_call = None
                    continue
                if data["calls"] != last_call or now - last_at >= REPORT_PERIOD_S:
                    publisher.publish_data({REPORT_KEY: data})
                    last_call, last_at = data["calls"], now
            except Exception:  # noqa: BLE001 - a report lost is a report lost; the rank goes on
                continue

    start_daemon(watch, "mpiworkbench-hang-reporter")  # runs on while a debugger stops the rank


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def sweep_stale(directory: str = "/dev/shm") -> int:
    """Remove the slot, event and stack files of processes that are gone (a killed rank cannot
    remove its own), and MPICH segments nobody maps any more
    (:func:`~mpiworkbench.core.shm.remove_unheld_segments`); returns how many were removed."""
    removed = len(shm.remove_unheld_segments(directory))
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        m = re.fullmatch(r"mpiworkbench-(\d+)\.(slot|events|stack|debug)", name)
        if not m:
            continue
        try:
            os.kill(int(m[1]), 0)
            continue  # alive (or someone else's: PermissionError below)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        _remove(os.path.join(directory, name))
        removed += 1
    return removed


@dataclass
class InFlight:
    """One process's in-flight record (see ``wb_slot`` in ``interposer.c``)."""

    pid: int
    rank: int
    size: int
    calls: int
    call: str | None  # the MPI call it is in now, None between calls
    peer: int
    tag: int
    bytes: int
    seconds: float    # how long it has been in that call
    sent: list[tuple[int, int, int, float]] = field(default_factory=list)  # recent (dest, tag, bytes, when)
    comm: int = -1    # the call's communicator: its index in the rank's table (0: COMM_WORLD)
    outside: float = 0.0  # not in a call: seconds since the last one began (or the execution did)

    def as_event(self) -> tuple:
        """The blocked call as a row of ``EVENT_DTYPE``, from its start until now."""
        now = time.clock_gettime(time.CLOCK_MONOTONIC)
        return (now - self.seconds, now, 0.0, KIND[self.call], self.peer, self.tag, self.comm, self.bytes, -3, -3, -1, -1, 1, -1)

    def describe(self) -> str:
        if self.call is None:
            return "not inside an MPI call" + (f" (computing for {self.outside:.1f} s)" if self.outside else "")
        args = []
        if self.peer >= 0 or self.peer == ANY_SOURCE:
            peer = "ANY_SOURCE" if self.peer == ANY_SOURCE else str(self.peer)
            name = "root" if KIND.get(self.call, -1) in COLLECTIVES else (
                "source" if KIND.get(self.call, -1) in BLOCKING_RECEIVES else "dest")
            args.append(f"{name}={peer}")
        if self.tag >= 0 or self.tag == ANY_TAG:
            args.append("tag=" + ("ANY_TAG" if self.tag == ANY_TAG else str(self.tag)))
        if self.bytes:
            args.append(f"{self.bytes} bytes")
        return f"{self.call}({', '.join(args)}) for {self.seconds:.1f} s"


def read_slot(pid: int, since: float | None = None, state=None) -> InFlight | None:
    """The in-flight record of process *pid* on this host (``None`` when there is none: the
    process runs without the interposer, has not initialised MPI, or is on another host).
    *since* (``time.monotonic()`` seconds, the clock the interposer uses): keep only the sends
    made from then on, e.g. those of the execution that hangs. *state*: the slot already read."""
    s = _slot_state(pid) if state is None else state
    if s is None:
        return None
    inside = int(s["depth"]) > 0
    now = time.clock_gettime(time.CLOCK_MONOTONIC)
    # outside a call: since the last one began (``since``), or since the execution began when
    # that was later (an upper bound of the time computing: the last call's own length is in it)
    last = float(s["since"]) if int(s["calls"]) else 0.0
    outside = 0.0 if inside or (not last and since is None) else now - max(last, since or 0.0)
    nsent = int(s["nsent"])
    recent = s["sent"]
    order = [(i % len(recent)) for i in range(max(0, nsent - len(recent)), nsent)]
    record = InFlight(
        pid=pid, rank=int(s["rank"]), size=int(s["size"]), calls=int(s["calls"]),
        call=kind_name(int(s["kind"])) if inside else None,
        peer=int(s["peer"]), tag=int(s["tag"]), bytes=int(s["bytes"]), comm=int(s["comm"]),
        seconds=max(0.0, now - float(s["since"])) if inside else 0.0, outside=max(0.0, outside),
        sent=[(int(recent[i]["dest"]), int(recent[i]["tag"]), int(recent[i]["bytes"]), float(recent[i]["t"]))
              for i in order],
    )
    if since is not None:
        record.sent = [sent for sent in record.sent if sent[3] >= since]
    return record


@dataclass
class RankState:
    """What a hang report knows of one rank."""

    rank: int
    state: str                  # "ok", "failed" or "running"
    error: str = ""
    inflight: InFlight | None = None
    stack: list[str] = field(default_factory=list)
    host: str = ""              # named in the report when the world spans several hosts

    @property
    def line(self) -> str | None:
        return user_line(self.stack)


def diagnose(ranks: list[RankState]) -> list[str]:
    """The likely causes, in words, from every rank's state (most specific first)."""
    by_rank = {r.rank: r for r in ranks}
    blocked = {r.rank: r.inflight for r in ranks if r.state == "running" and r.inflight and r.inflight.call}
    causes: list[str] = []
    seen: set[int] = set()
    for rank, rec in sorted(blocked.items()):  # a wrong tag first: it explains what follows from it
        sender = by_rank.get(rec.peer)
        if KIND.get(rec.call, -1) in BLOCKING_RECEIVES and rec.peer >= 0 and rec.tag >= 0 and sender and sender.inflight:
            tags = sorted({t for d, t, *_ in sender.inflight.sent if d == rank})
            if tags and rec.tag not in tags:
                seen.update({rank, rec.peer})
                causes.append(
                    f"rank {rank} waits in {rec.call}(source={rec.peer}, tag={rec.tag}), but rank "
                    f"{rec.peer} never sent tag {rec.tag} to it (it sent tag{'s' if len(tags) > 1 else ''} "
                    f"{', '.join(map(str, tags))}): a wrong tag"
                )
    for rank, rec in sorted(blocked.items()):
        if rank in seen:
            continue
        kind, other, sender = KIND.get(rec.call, -1), blocked.get(rec.peer), by_rank.get(rec.peer)
        if kind in BLOCKING_SENDS and other is not None and KIND.get(other.call, -1) in BLOCKING_SENDS \
                and other.peer == rank:
            seen.update({rank, rec.peer})
            causes.append(
                f"ranks {rank} and {rec.peer} both block in {rec.call} to each other (a send–send "
                f"deadlock: {rec.bytes} and {other.bytes} bytes are too large to be buffered, so each "
                "send waits for a receive that is never posted); use Sendrecv, or Isend/Irecv then Wait"
            )
        elif kind in BLOCKING_RECEIVES and other is not None and KIND.get(other.call, -1) in BLOCKING_RECEIVES \
                and other.peer == rank:
            seen.update({rank, rec.peer})
            causes.append(f"ranks {rank} and {rec.peer} both wait to receive from each other "
                          "(a receive–receive deadlock): one of them must send first")
        elif kind in BLOCKING_RECEIVES and sender is not None and sender.state == "failed":
            causes.append(f"rank {rank} waits in {rec.call} for rank {rec.peer}, which raised "
                          f"{sender.error or 'an exception'}")
    causes += late_ranks(ranks, blocked, seen)
    failed = [r for r in ranks if r.state == "failed"]
    in_collective = [(rank, rec) for rank, rec in sorted(blocked.items()) if KIND.get(rec.call, -1) in COLLECTIVES]
    if failed and in_collective:
        names = ", ".join(f"rank {r.rank}" for r in failed)
        errors = "; ".join(f"rank {r.rank}: {r.error}" for r in failed if r.error)
        waits = "; ".join(f"rank {rank} waits in {rec.call} for {rec.seconds:.0f} s" for rank, rec in in_collective)
        causes.append(f"{names} raised before the {in_collective[0][1].call.removeprefix('MPI_').lower()}"
                      f" ({errors}); {waits}")
    elif in_collective and not causes:
        missing = [r.rank for r in ranks if r.rank not in blocked or KIND.get(blocked[r.rank].call, -1) not in COLLECTIVES]
        if missing:
            causes.append(
                f"ranks {', '.join(str(r) for r, _ in in_collective)} wait in "
                f"{in_collective[0][1].call} for rank(s) {', '.join(map(str, missing))}, which never "
                "entered it (they are elsewhere, see below)"
            )
    causes += _silent_hosts(ranks)
    return causes


def _silent_hosts(ranks: list[RankState]) -> list[str]:
    """A host none of whose running ranks reported, while ranks elsewhere did: cut off."""
    hosts = {r.host for r in ranks if r.host}
    heard = {r.host for r in ranks if r.inflight is not None or r.state != "running"}
    if not heard:  # nobody answered (no interposer anywhere, say): nothing to tell apart
        return []
    causes = []
    for host in sorted(hosts - heard):
        silent = [r.rank for r in ranks if r.host == host]
        causes.append(
            f"nothing came back from {host} (rank{'s' if len(silent) > 1 else ''} "
            f"{', '.join(map(str, silent))}) while the ranks on {', '.join(sorted(heard))} answered: {host} or "
            "its network link may be down (or its ranks are busy outside MPI). If it is down, its engines "
            "will be unregistered when they miss the controller's heartbeats; wb.restart() once it is back"
        )
    return causes


def report_lines(ranks: list[RankState]) -> list[str]:
    """The rank-by-rank part of a hang report: call, peer, tag, bytes, how long, Python line."""
    lines = []
    several = len({r.host for r in ranks if r.host}) > 1
    for r in sorted(ranks, key=lambda r: r.rank):
        who = f"rank {r.rank}" + (f" on {r.host}" if several and r.host else "")
        if r.state == "failed":
            lines.append(f"  {who}: raised {r.error}")
            continue
        if r.state == "ok":
            lines.append(f"  {who}: finished")
            continue
        where = r.inflight.describe() if r.inflight else (
            "no in-flight record (no interposer in this rank, or it did not report: cut off from the "
            "controller, or busy outside MPI)")
        text = f"  {who}: blocked in {where}" if r.inflight and r.inflight.call else f"  {who}: {where}"
        if r.line:
            text += f"\n      at {r.line}"
        lines.append(text)
    return lines


def read_events(pid: int, state=None) -> np.ndarray:
    """The events *pid* recorded so far (tracing on), read from outside — e.g. while it hangs.
    *state*: its slot already read (it says how many events there are)."""
    s = _slot_state(pid) if state is None else state
    if s is None:
        return np.zeros(0, EVENT_DTYPE)
    n = int(s["nevents"])
    try:
        with open(events_path(pid), "rb") as f:
            raw = f.read(n * EVENT_DTYPE.itemsize)
    except (OSError, ValueError, IndexError):
        return np.zeros(0, EVENT_DTYPE)
    return np.frombuffer(raw[: len(raw) - len(raw) % EVENT_DTYPE.itemsize], EVENT_DTYPE).copy()
