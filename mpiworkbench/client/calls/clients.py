"""Who the clients of a world are: each one's identity (its notebook, process, host and kernel),
shown to the others while they wait for it, and the file locks by which a live client is told from
a dead one (:mod:`mpiworkbench.client.calls.turns` keeps them in the world's directory)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def notebook_name() -> str:
    """What other clients call this process: the notebook's file name in a Jupyter kernel
    (``$JPY_SESSION_NAME``), else the script's name."""
    session = os.environ.get("JPY_SESSION_NAME")
    if session:
        return Path(session).name
    script = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if script in ("", "-c", "ipykernel_launcher.py", "-m"):
        return "python"
    return script


def _kernel_id() -> str:
    with contextlib.suppress(Exception):
        from ipykernel import get_connection_file

        name = Path(get_connection_file()).stem
        return name[len("kernel-"):] if name.startswith("kernel-") else name
    return ""


@dataclass
class ClientInfo:
    """Who a client of the world is: shown to the others while they wait for it."""

    id: str
    notebook: str
    pid: int
    host: str
    kernel: str = ""
    since: float = field(default_factory=time.time)
    #: ipyparallel's session id of the client (the hub records it with every task).
    session: str = ""

    @classmethod
    def here(cls, session: str = "") -> "ClientInfo":
        return cls(uuid.uuid4().hex[:12], notebook_name(), os.getpid(), socket.gethostname(),
                   _kernel_id(), session=session)

    def who(self) -> str:
        """``05_speedup.ipynb (pid 4121)``, with the host when it is not this one."""
        where = f"pid {self.pid}" + ("" if self.host == socket.gethostname() else f" on {self.host}")
        return f"{self.notebook} ({where})"


def info_of(data: dict[str, Any]) -> ClientInfo:
    """The :class:`ClientInfo` a client wrote (fields a newer version added are left out)."""
    known = ClientInfo.__dataclass_fields__
    return ClientInfo(**{k: v for k, v in data.items() if k in known})


def try_flock(fd: int, mode: int = fcntl.LOCK_EX) -> bool:
    """Take the lock *mode* of *fd* without waiting; whether it was taken."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise


def held_by_someone(path: Path) -> bool:
    """Whether a live process holds the lock of *path* (a ``clients/`` or ``queue/`` entry)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return _locked(fd)
    finally:
        os.close(fd)


def _locked(fd: int) -> bool:
    """Whether another open file holds the lock of *fd*'s file (a shared lock is taken and given
    back at once when none does)."""
    if try_flock(fd, fcntl.LOCK_SH):
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    return True


def read_holder(directory: str | os.PathLike) -> dict[str, Any] | None:
    """Who holds the turn of the world *directory* (its ``turn.lock``: the holder's record, a
    dict of :class:`ClientInfo` fields plus ``label``, ``running_since`` and ``blocked``), as a
    process that does not hold it reads it: ``None`` when the turn is free (or was never taken),
    ``{}`` when its holder's record cannot be read."""
    try:
        fd = os.open(Path(directory) / "turn.lock", os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if not _locked(fd):
            return None
        for _attempt in range(20):  # the holder may be writing its record this moment
            text = os.pread(fd, 65536, 0)
            try:
                return json.loads(text) if text else {}
            except ValueError:
                time.sleep(0.001)
        return {}
    finally:
        os.close(fd)


def holder_phrase(holder: dict[str, Any] | None) -> str:
    """Who holds a world's turn (:meth:`Turns.holder`'s record), doing what, for how long."""
    if holder is None:
        return "it is free"
    if not holder:
        return "another client holds it"
    since = holder.get("running_since")
    for_s = f" (for {time.time() - since:.0f} s)" if since else ""
    return f"{info_of(holder).who()} runs {holder.get('label') or 'a call'}{for_s}"


def blocked_message(holder: dict[str, Any]) -> str:
    """What a call waiting behind blocked work is told (``WorldBlocked``)."""
    who = info_of(holder).who() if holder else "another client"
    label = holder.get("label") or "a call"
    report = holder.get("blocked") or ""
    head = (f"the MPI world is blocked: {who}'s {label} outlived its timeout and still runs on "
            f"the ranks (most likely stuck in MPI). Every call waits behind it. ")
    advice = (f"Ask its owner to restart the world, or restart it yourself: wb.restart() "
              f"(everything on the ranks is lost; {who} is told on its next call)")
    return head + advice + (f"\nIts hang report:\n{report}" if report else "")
