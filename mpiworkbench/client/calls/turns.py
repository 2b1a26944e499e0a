"""One MPI world, many clients: the turn every MPI execution takes.

ipyparallel sends a multi-engine call as one message per engine, and the controller's queues
interleave the messages of all its clients: two notebooks attached to one cluster reach the
ranks in different orders, and their collectives deadlock (rank 0 in one notebook's
``Bcast``, rank 1 in the other's ``Allreduce``). So every execution of a session first takes
the world's **turn**: a client submits only while it holds it, and holds it until its
execution has finished on every rank. Whatever a client submits is then complete on all
ranks before another client's work reaches any of them, so every rank runs the clients' work
in one and the same order. A client's own executions may overlap (one ipyparallel client
reaches every engine in submission order), so a notebook never waits on its own work, and
never on another's *finished* work.

The turn lives in a directory beside the cluster file (``security/mpiworkbench-world-<id>/``
of the cluster's profile; the connection files are there, so every client can reach it):

``turn.lock``
    an exclusive ``flock`` held while a client's executions run; its content says who holds
    it, for what, since when, and whether that work has outlived its timeout (*blocked*).
    A client that dies (a killed kernel) loses the lock with its process.
``queue/<ticket>.json``
    a client waiting for the turn, locked by it while it waits (a dead waiter's entry is
    found unlocked and removed); the oldest ticket goes next, so a busy loop (a panel's
    Play) cannot starve a cell of another notebook.
``clients/<id>.json``
    every attached session, locked for its life: :meth:`Turns.clients` lists them.
``world.json``
    the current engine set: its rank map and who (re)started it when, so an attach reads the
    rank map without asking busy ranks, and a notebook learns that another restarted the world.

The cost per execution, uncontended, is a directory listing, an ``flock`` and a write of a
small file (``benchmarks/shared_world.py`` measures it against unordered calls).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterator

from mpiworkbench.client.calls.clients import (ClientInfo, blocked_message, held_by_someone, holder_phrase,
                                                 read_holder)
from mpiworkbench.client.cluster.record import read_json, recorded_engine_set, write_json_atomic
from mpiworkbench.client.errors import WorldBlocked, WorldBusy
from mpiworkbench.lab.protocol import READER_KEY, WORLD_RECORD, reader_record
from mpiworkbench import __version__

#: Seconds of waiting before a call says whom it waits for, then how often it says it again.
SAY_AFTER_S = 1.0
SAY_EVERY_S = 15.0
#: Longest sleep between two looks at the turn while waiting (it starts at 0.5 ms).
POLL_MAX_S = 0.02


#: What a client holding the turn to restart the world says it does.
RESTARTING = "restarting the MPI world"


class Turns:
    """This client's handle on the shared state of one cluster's MPI world (see the module).

    Parameters
    ----------
    directory : path
        :func:`world_directory` of the cluster (created when missing).
    me : ClientInfo
        Who this client is.
    say : callable
        Where waiting messages go (``print`` by default).
    """

    def __init__(self, directory: str | os.PathLike, me: ClientInfo, say: Callable[[str], None] = print,
                 refuse_own_blocked: bool = False):
        self.directory = Path(directory)
        self.me = me
        self.say = say
        #: Refuse our own calls behind our own blocked work at once, instead of queueing them
        #: behind it (a grader's kernels: the rest of a hung submission fails fast).
        self.refuse_own_blocked = refuse_own_blocked
        for sub in ("queue", "clients"):
            (self.directory / sub).mkdir(parents=True, exist_ok=True)
        self._mutex = threading.RLock()
        self._inflight = 0
        self._label = ""
        self._since = 0.0
        self._blocked = ""
        self._blocked_token: object = None
        self._turn = os.open(self.directory / "turn.lock", os.O_RDWR | os.O_CREAT, 0o600)
        self._held = False
        self._changed_at_grab = False
        #: Whether the turn last taken was left by a client that died holding it (the taker
        #: looks at what it left, and clears this).
        self.inherited = False
        self._client_path = self.directory / "clients" / f"{me.id}.json"
        self._client_fd: int | None = os.open(self._client_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._client_fd, fcntl.LOCK_EX)
        os.write(self._client_fd, json.dumps(asdict(me)).encode())
        self._generation_seen = self._world_stamp()

    # ------------------------------------------------------------------ the turn
    def acquire(self, label: str, timeout: float | None, restarting: bool = False) -> bool:
        """Wait for the turn, then hold it; whether the world's engine set was recorded anew
        since we last looked (:meth:`world_changed`, read as the turn is taken: a restart holds
        the turn, so while we hold it the engine set stays as it was). Our own work on the
        ranks never makes us wait: a call of ours joins the turn we hold (one client reaches
        every rank in submission order), even behind work of ours that outlived its timeout
        (unless :attr:`refuse_own_blocked`: then such a call raises ``WorldBlocked`` at once).

        Raises
        ------
        WorldBlocked
            The client holding the turn reported its work as blocked (it outlived its timeout).
        WorldBusy
            Still waiting after *timeout* seconds.
        KeyboardInterrupt
            Leaves the queue; nothing was sent to the ranks.

        With *restarting*, blocked work does not refuse the call: a restart ends it.
        """
        with self._mutex:
            if self._held:
                if self._blocked and self.refuse_own_blocked and not restarting:
                    raise WorldBlocked(
                        f"an earlier call of this notebook ({self._label}) outlived its timeout and still runs on "
                        "the ranks (most likely stuck in MPI); later calls are refused instead of waiting behind "
                        f"it. Restart the world: wb.restart()\nIts hang report:\n{self._blocked}")
                self._inflight += 1
                return False
            try:  # (as _queue_entries reads it: a draft is not in line yet)
                queued = any(n.endswith(".json") and not n.startswith(".") for n in os.listdir(self.directory / "queue"))
            except OSError:
                queued = False
            if not queued and self._grab(label):
                return self._changed_at_grab
        return self._wait_in_line(label, timeout, restarting)

    def _grab(self, label: str) -> bool:
        """Take the turn if it is free (caller holds the mutex), and note whether the world's
        engine set changed since we last looked (:meth:`acquire` returns it)."""
        try:
            fcntl.flock(self._turn, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # (EWOULDBLOCK: someone holds it)
            return False
        self._held, self._inflight, self._label, self._since, self._blocked = True, 1, label, time.time(), ""
        # a holder's record left in the lock file: its client died holding the turn (a release
        # empties it), maybe in the middle of debugging (see calls/debug_records.py)
        self.inherited = os.fstat(self._turn).st_size > 0
        self._write_holder()
        try:
            self._changed_at_grab = (self.directory / WORLD_RECORD).stat().st_mtime_ns != self._generation_seen
        except OSError:
            self._changed_at_grab = self._generation_seen != 0
        return True

    def _wait_in_line(self, label: str, timeout: float | None, restarting: bool = False) -> bool:
        start = time.monotonic()
        ticket = self.directory / "queue" / f"{time.time_ns():020d}-{self.me.id}.json"
        # written and locked under another name first: a ticket in the queue is always locked
        # by a live waiter, so an unlocked one is a dead waiter's
        draft = ticket.with_name(f".{ticket.name}")
        fd = os.open(draft, os.O_RDWR | os.O_CREAT, 0o600)
        said_at, said_for, pause = None, None, 0.0005
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, json.dumps({**asdict(self.me), "label": label, "waiting_since": time.time()}).encode())
            os.replace(draft, ticket)
            while True:
                with self._mutex:
                    if self._held:  # our own work took the turn meanwhile (another thread)
                        self._inflight += 1
                        return False
                    if self._first_in_line(ticket.name) and self._grab(label):
                        return self._changed_at_grab
                holder = self.holder()
                waited = time.monotonic() - start
                if holder and holder.get("blocked") and not restarting:
                    raise WorldBlocked(blocked_message(holder))
                if timeout is not None and waited >= timeout:
                    raise WorldBusy(f"waited {waited:.0f} s for the MPI world: {holder_phrase(holder)}. "
                                    "Nothing was sent to the ranks; try again later, or raise wb.timeout "
                                    "to wait longer")
                now = time.monotonic()
                who = (holder or {}).get("id")
                if waited >= SAY_AFTER_S and (said_at is None or now - said_at >= SAY_EVERY_S or who != said_for):
                    self.say(f"waiting for the MPI world: {holder_phrase(holder)}; waited {waited:.0f} s so far "
                             "(interrupt to give up: nothing is sent until it is our turn)")
                    said_at, said_for = now, who
                time.sleep(pause)
                pause = min(pause * 2, POLL_MAX_S)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(ticket)
            os.close(fd)

    def _queue_entries(self) -> list[str]:
        try:
            return sorted(n for n in os.listdir(self.directory / "queue")
                          if n.endswith(".json") and not n.startswith("."))  # not a draft
        except OSError:
            return []

    def _first_in_line(self, mine: str) -> bool:
        for name in self._queue_entries():
            if name >= mine:
                return True
            path = self.directory / "queue" / name
            if held_by_someone(path):
                return False
            with contextlib.suppress(OSError):  # its waiter is gone (a killed kernel)
                os.unlink(path)
        return True

    def release(self, token: object = None) -> None:
        """One execution of ours (*token*, as given to :meth:`mark_blocked`) finished; give the
        turn up when none is left."""
        with self._mutex:
            if not self._held:
                return
            self._inflight -= 1
            if token is not None and token == self._blocked_token:
                self._blocked, self._blocked_token = "", None
                if self._inflight > 0:
                    self._write_holder()
            if self._inflight > 0:
                return
            self._held, self._blocked, self._blocked_token = False, "", None
            with contextlib.suppress(OSError):
                os.ftruncate(self._turn, 0)
            fcntl.flock(self._turn, fcntl.LOCK_UN)

    def mark_blocked(self, report: str, token: object = None) -> None:
        """Our execution *token* outlived its timeout: other clients stop waiting for it and
        are told why (*report*: the hang report, short). Cleared when it finishes."""
        with self._mutex:
            if not self._held:
                return
            self._blocked, self._blocked_token = report or "timed out", token
            self._write_holder()

    @property
    def holding(self) -> bool:
        """Whether this client holds the turn (its executions run on the ranks)."""
        return self._held

    def _write_holder(self) -> None:
        record = {**asdict(self.me), "label": self._label, "running_since": self._since,
                  "blocked": self._blocked}
        data = json.dumps(record).encode()
        os.ftruncate(self._turn, 0)
        os.pwrite(self._turn, data, 0)

    # ------------------------------------------------------------------ who is there
    def holder(self) -> dict[str, Any] | None:
        """Who holds the turn now (a dict of :class:`ClientInfo` fields plus ``label``,
        ``running_since`` and ``blocked``), or ``None`` when the world is free."""
        if self._held:
            return {**asdict(self.me), "label": self._label, "running_since": self._since, "blocked": self._blocked}
        return read_holder(self.directory)

    def waiting(self) -> list[dict[str, Any]]:
        """The clients waiting for the turn, first in line first."""
        out = []
        for name in self._queue_entries():
            path = self.directory / "queue" / name
            data = read_json(path)
            if data and held_by_someone(path):
                out.append(data)
        return out

    def clients(self) -> list[dict[str, Any]]:
        """Every client attached to this world: who (notebook, kernel, pid, host), since when,
        and its state now: ``running`` (holds the turn), ``blocked``, ``waiting`` or ``idle``."""
        holder = self.holder() or {}
        waiting = {w["id"]: w for w in self.waiting()}
        out = []
        for path in sorted((self.directory / "clients").glob("*.json")):
            data = read_json(path) if path != self._client_path else asdict(self.me)
            if not data:
                continue
            if path != self._client_path and not held_by_someone(path):
                with contextlib.suppress(OSError):  # a client whose process is gone
                    path.unlink()
                continue
            entry = {k: data.get(k) for k in ("notebook", "kernel", "pid", "host", "since", "id")}
            entry["me"] = data.get("id") == self.me.id
            if holder.get("id") == data.get("id"):
                entry["state"] = "blocked" if holder.get("blocked") else "running"
                entry["label"] = holder.get("label", "")
            elif data.get("id") in waiting:
                entry["state"], entry["label"] = "waiting", waiting[data["id"]].get("label", "")
            else:
                entry["state"], entry["label"] = "idle", ""
            out.append(entry)
        if holder and holder.get("id") not in {e["id"] for e in out}:  # holds it, not attached any more
            out.append({**{k: holder.get(k) for k in ("notebook", "kernel", "pid", "host", "since", "id")},
                        "me": False, "state": "blocked" if holder.get("blocked") else "running",
                        "label": holder.get("label", "")})
        return sorted(out, key=lambda e: e.get("since") or 0)

    def session_of(self, session: str) -> dict[str, Any] | None:
        """The attached client whose ipyparallel session id is *session*, if any."""
        for path in (self.directory / "clients").glob("*.json"):
            data = read_json(path) if path != self._client_path else asdict(self.me)
            if data and data.get("session") == session:
                return data
        return None

    # ------------------------------------------------------------------ the engine set
    def _world_stamp(self) -> int:
        """The world record's modification time (0 when there is none). :meth:`_grab` reads it too."""
        try:
            return (self.directory / WORLD_RECORD).stat().st_mtime_ns
        except OSError:
            return 0

    def engine_set(self) -> dict[str, Any] | None:
        """The recorded engine set (``ranks``: engine id → rank, ``generation``,
        ``restarted_by``, ``at``, ``thread_level``), or ``None``."""
        return recorded_engine_set(self.directory)

    def record_engine_set(self, ranks: dict[int, int], restarted: bool = False, **facts: Any) -> dict[str, Any]:
        """Write the engine set now on the ranks (after a start, attach or restart)."""
        old = self.engine_set() or {}
        record = {
            "generation": int(old.get("generation", 0)) + (1 if restarted or not old else 0),
            "ranks": {str(e): r for e, r in ranks.items()},
            "restarted_by": asdict(self.me) if restarted else old.get("restarted_by"),
            "at": time.time() if restarted or not old else old.get("at"),
            **{k: v for k, v in old.items() if k not in ("generation", "ranks", "restarted_by", "at")},
            # who reads this world's files for a lab (the last recorder's environment: a lab part
            # of any environment runs it, mpiworkbench.lab.protocol)
            READER_KEY: reader_record(__version__),
            **facts,
        }
        write_json_atomic(self.directory / WORLD_RECORD, record)
        self._generation_seen = self._world_stamp()
        return record

    def world_changed(self) -> bool:
        """Whether someone recorded a new engine set since we last looked (one ``stat``; what
        :meth:`changed_since_seen` then reads)."""
        return self._world_stamp() != self._generation_seen

    def changed_since_seen(self) -> dict[str, Any] | None:
        """The engine set, when someone else recorded a new one since we last looked (cheap:
        one ``stat``); ``None`` otherwise."""
        if not self.world_changed():
            return None
        self._generation_seen = self._world_stamp()
        return self.engine_set()

    def remove(self) -> None:
        """Leave the world and remove its directory (its cluster has stopped)."""
        import shutil

        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def close(self) -> None:
        """Leave the world: give up the turn and the client entry (idempotent)."""
        with self._mutex:
            if self._held:
                self._inflight = 1
                self.release()
            if self._client_fd is not None:
                with contextlib.suppress(OSError):
                    self._client_path.unlink()
                os.close(self._client_fd)
                self._client_fd = None
                os.close(self._turn)


@contextlib.contextmanager
def exclusive_use(world: Turns | None, label: str, timeout: float | None, restarting: bool = False) -> Iterator[None]:
    """Use *world*'s ranks alone for a block of blocking calls (a rank map; a restart, with
    *restarting*), waiting at most *timeout* for the other clients' work to end; nothing to
    hold when *world* is ``None`` (ordering switched off)."""
    if world is None:
        yield
        return
    world.acquire(label, timeout, restarting=restarting)
    try:
        yield
    finally:
        world.release()
