"""A debugging session's record in the world's directory, and the ranks a client that died while
debugging left stopped, let go by the next client.

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
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

from mpiworkbench.client.calls import kernel_proxy
from mpiworkbench.client.calls.rank_debugger import DebuggerError, RankDebugger

#: The world directory's folder of debugging sessions' records.
FOLDER = "debugging"
#: Seconds each request to a rank left stopped may take (through the controller).
RELEASE_TIMEOUT_S = 20.0


class Record:
    """This client's record of one debugging session, locked while it lasts (:func:`hold`)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

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
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, json.dumps({"ranks": sorted(ranks), "client": asdict(turns.me)}).encode())
    return Record(path, fd)


def release_orphans(session) -> list[str]:
    """Let go the ranks of every debugging session whose client died (its record unlocked): a
    line for each rank released (``[]`` when there were none). A record another client is
    releasing meanwhile is left to it."""
    turns = getattr(getattr(session, "_connection", None), "turns", None)
    folder = turns.directory / FOLDER if turns is not None else None
    if folder is None or not folder.is_dir():
        return []
    said = []
    for path in sorted(folder.glob("*.json")):
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:  # removed meanwhile: its session ended
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its client lives (or another is releasing it)
                continue
            record: dict[str, Any] = json.loads(os.pread(fd, 1 << 16, 0) or b"{}")
            who = (record.get("client") or {}).get("notebook") or "a client"
            for rank in record.get("ranks") or []:
                said.append(f"rank {rank}: {release_rank(session, rank)} (left by {who}, which ended while debugging)")
            with contextlib.suppress(OSError):
                path.unlink()
        except (OSError, ValueError):  # a record half-written when its client died: nothing held
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)
    return said


def release_rank(session, rank: int) -> str:
    """Drop every breakpoint *rank*'s debugger holds, continue the rank if stopped, and end its
    debugger session, through a proxy of its kernel (:mod:`.kernel_proxy`); what was done."""
    try:
        engine_ranks = set(session.ranks.values())
        if rank not in engine_ranks:
            return "not a rank of this world any more"
        proxy = kernel_proxy.open_proxies(session, [rank])[rank]
        with tempfile.TemporaryDirectory(prefix="mpiworkbench-release-") as scratch:
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
