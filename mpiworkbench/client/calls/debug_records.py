"""A debugging session's record in the world's directory; the ranks a client that died while
debugging left stopped, let go by the next client; and where each rank is stopped
(:func:`stop_records`).

A debugging session (``wb.debug()``, a ``%%px --debug`` cell) stops ranks at breakpoints; leaving it
continues them (:meth:`~mpiworkbench.client.calls.debugging.Debugging.close`). But a client that
*dies* while its ranks are stopped — a notebook's kernel restarted or killed on a world it attached
to — leaves nobody to continue them: the stopped rank waits in its cell for ever, its peers in the
collective it never reaches, and a stopped rank is never called hung. So every session records
itself here (``<world directory>/debugging/<client>-<n>.json``: its ranks and its client, the file
locked by the client while the session lasts) and removes the record when it ends. A record whose
lock is free belongs to a dead client: the next client to take the world's turn after it
(:attr:`Turns.inherited`), or to find a rank stopped while it waits for a call, lets those ranks
go — every breakpoint their debuggers hold dropped, ``continue``, ``disconnect`` — through the
controller (:mod:`~mpiworkbench.client.calls.kernel_proxy`: nothing of the dead client is needed,
and nothing is asked of the ranks' busy main threads). The cell they were in then runs to its end.

A client killed while its ``%%px --debug`` cell was still being set up can have its last messages
(a breakpoint, the cell) reach a rank *after* it was let go: they travel by other ways (its own
connection to the rank's kernel, the controller, rank 0's relay) than the release. So the record
also names, before each breakpoint is asked for, the file it is in; the client that let the ranks
go then watches them for :data:`WATCH_S` seconds (:func:`_watch`, a thread of its own, which ends)
and lets go again any rank that stops in one of those files while no live debugging session holds
it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable, Iterator

from mpiworkbench.client.calls import kernel_proxy
from mpiworkbench.client.calls.rank_debugger import DebuggerError, RankDebugger
from mpiworkbench.core.threads import start_daemon
from mpiworkbench.trace import stops

#: The world directory's folder of debugging sessions' records.
FOLDER = "debugging"
#: Seconds each request to a rank left stopped may take (through the controller).
RELEASE_TIMEOUT_S = 20.0
#: Seconds the client that let a dead client's ranks go watches them for its late breakpoints.
WATCH_S = 120.0
#: Seconds between two looks at the watched ranks' stop records (files, and the proxies' records).
WATCH_POLL_S = 0.2


class Record:
    """This client's record of one debugging session, locked while it lasts (:func:`hold`)."""

    def __init__(self, path: Path, fd: int, content: dict[str, Any]) -> None:
        self.path, self.fd, self.content = path, fd, content

    def note(self, source: str) -> None:
        """A breakpoint is about to be asked for in *source*: named in the record first."""
        if source not in self.content["paths"]:
            self.content["paths"].append(source)
            data = json.dumps(self.content).encode()
            with contextlib.suppress(OSError):  # (a session ended: nothing left to record)
                os.pwrite(self.fd, data, 0)
                os.ftruncate(self.fd, len(data))

    def let_go(self) -> None:
        """The session ended: its record removed, its lock given back."""
        with contextlib.suppress(OSError):
            self.path.unlink()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def hold(session, ranks: Iterable[int]) -> Record | None:
    """Record a debugging session of *session* on *ranks*, locked until :meth:`Record.let_go` (or
    this process's end); ``None`` for a session without a world directory."""
    turns = getattr(getattr(session, "_connection", None), "turns", None)
    if turns is None:
        return None
    folder = turns.directory / FOLDER
    folder.mkdir(exist_ok=True)
    path = folder / f"{turns.me.id}-{uuid.uuid4().hex[:8]}.json"
    # made locked under another name, then named: no other client ever sees it unlocked
    made = path.with_suffix(".new")
    fd = os.open(made, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    content = {"ranks": sorted(ranks), "client": asdict(turns.me), "paths": []}
    os.write(fd, json.dumps(content).encode())
    os.rename(made, path)
    return Record(path, fd, content)


def release_orphans(session) -> list[str]:
    """Let go the ranks of every debugging session whose client died (its record unlocked): a
    line for each rank released (``[]`` when there were none). A record another client is
    releasing meanwhile is left to it."""
    turns = getattr(getattr(session, "_connection", None), "turns", None)
    folder = turns.directory / FOLDER if turns is not None else None
    if folder is None or not folder.is_dir():
        return []
    said: list[str] = []
    watched: dict[int, set[str]] = {}
    for path, fd, free in _opened(folder, fcntl.LOCK_EX):
        if not free:  # its client lives (or another is releasing it)
            continue
        try:
            record: dict[str, Any] = json.loads(os.pread(fd, 1 << 16, 0) or b"{}")
            who = (record.get("client") or {}).get("notebook") or "a client"
            for rank in record.get("ranks") or []:
                said.append(f"rank {rank}: {release_rank(session, rank)} (left by {who}, which ended while debugging)")
                if record.get("paths"):
                    watched.setdefault(rank, set()).update(record["paths"])
            with contextlib.suppress(OSError):
                path.unlink()
        except (OSError, ValueError):  # a record half-written when its client died: nothing held
            with contextlib.suppress(OSError):
                path.unlink()
    if watched:
        start_daemon(_watch, "mpiworkbench-debug-release-watch", session, folder, watched, time.monotonic() + WATCH_S)
    return said


def stop_records(wb, ranks: Iterable[int] | None = None) -> dict[int, dict[str, Any]]:
    """Rank → the stop record of each rank (of *ranks*, or all) that has one: the rank's own for
    a rank on this host, else what its proxy saw (:meth:`.kernel_proxy.KernelProxy.stop_record`)."""
    wanted = None if ranks is None else set(ranks)
    processes = getattr(wb, "_rank_processes", {}) or {}
    here = socket.gethostname()
    found = {}
    for rank, info in processes.items():
        if (wanted is None or rank in wanted) and info.get("host") == here and "pid" in info:
            stop = stops.read(info["pid"])
            if stop is not None:
                found[rank] = stop
    for rank, proxy in kernel_proxy.proxies_of(getattr(wb, "_connection", None)).items():
        if wanted is None or rank in wanted:
            found.setdefault(rank, proxy.stop_record())
    return found


def _watch(session, folder: Path, watched: dict[int, set[str]], until: float) -> None:
    """Until *until* (``time.monotonic()``) or the session leaves its world: let go again each
    rank of *watched* that stops in one of its files (a dead client's breakpoint that came late)
    while no live debugging session holds that rank."""
    connection = getattr(session, "_connection", None)
    try:
        while time.monotonic() < until and getattr(session, "_connection", None) is connection:
            for rank, stop in stop_records(session, watched).items():  # (the watched ranks' files only)
                where = (stop or {}).get("where") or {}
                if stops.is_stopped(stop) and where.get("file") in watched.get(rank, ()) and not _held(folder, rank):
                    release_rank(session, rank)
            time.sleep(WATCH_POLL_S)  # polling the ranks' stop records: a condition, not a pause
    except Exception:  # noqa: BLE001 - a thread of the notebook's kernel: its traceback would land in
        return  # whatever cell runs. (The watch ends; a rank stopped late stays so: docs/debugging.md)


def _held(folder: Path, rank: int) -> bool:
    """Whether a live client's debugging session holds *rank* (its record locked; one being
    rewritten, unreadable for a moment, counts as holding)."""
    with contextlib.closing(_opened(folder, fcntl.LOCK_SH)) as records:
        for _path, fd, free in records:
            if free:  # its client died
                continue
            try:
                if rank in (json.loads(os.pread(fd, 1 << 16, 0) or b"{}").get("ranks") or []):
                    return True
            except (OSError, ValueError):
                return True
    return False


def _opened(folder: Path, lock: int) -> Iterator[tuple[Path, int, bool]]:
    """Each record of *folder*, opened: its path, its descriptor (closed once the next is asked
    for) and whether *lock* was taken at once — a record's lock is free only when its client
    died."""
    for path in sorted(folder.glob("*.json")):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:  # removed meanwhile: its session ended
            continue
        try:
            try:
                fcntl.flock(fd, lock | fcntl.LOCK_NB)
            except BlockingIOError:
                yield path, fd, False
            else:
                yield path, fd, True
        finally:
            os.close(fd)


#: One release at a time in this process (the turn's holder and a watch may find the same rank).
_releasing = threading.Lock()


def release_rank(session, rank: int) -> str:
    """Drop every breakpoint *rank*'s debugger holds, continue the rank if stopped, and end its
    debugger session, through a proxy of its kernel (:mod:`.kernel_proxy`); what was done."""
    try:
        engine_ranks = set(session.ranks.values())
        if rank not in engine_ranks:
            return "not a rank of this world any more"
        proxy = kernel_proxy.open_proxies(session, [rank])[rank]
        with _releasing, tempfile.TemporaryDirectory(prefix="mpiworkbench-release-") as scratch:
            file = Path(scratch) / "kernel.json"
            fd = os.open(file, os.O_WRONLY | os.O_CREAT, 0o600)  # (it holds the proxy's key)
            with os.fdopen(fd, "w") as f:
                json.dump(proxy.info, f)
            debugger = RankDebugger(rank, file, RELEASE_TIMEOUT_S)
            try:
                return debugger.release_left_behind()
            finally:
                debugger.client.stop_channels()
    except (DebuggerError, OSError, RuntimeError, ValueError) as exc:
        return f"not released: {exc}"
