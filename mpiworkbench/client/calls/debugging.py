"""Debugging the ranks: every rank's kernel opened to Jupyter clients, and a client of the
Jupyter debug protocol for all of them.

An ipyparallel engine is an ipykernel kernel whose sockets are connected to the controller,
not bound; and ipyparallel never gives it the socket its debugger speaks through, so its
debugger is off. The workbench's engines are made debuggable at start
(:func:`mpiworkbench.client.cluster.engine_start.debuggable`), and here each rank's kernel is opened
on demand: its shell, control, IOPub and stdin sockets are bound beside their controller
connections (ipyparallel's ``bind_kernel``) and a Jupyter connection file is written for it
(:func:`connection_file`), signed with the cluster's key like every other message of the
cluster. Any Jupyter client can then use the rank: a console, JupyterLab (``mpiworkbench lab``
lists the files as running kernels, so the Debugger sidebar drives the rank), or
:class:`RankDebugger`, which sends the same ``debug_request`` messages JupyterLab sends.

``wb.debug()`` gives a :class:`Debugging`: breakpoints set once for all ranks (or some), the
ranks grouped by where they stopped, stepping one rank while the others wait, and ``close()``
(or leaving the ``with`` block) clears the breakpoints and continues every rank, so a debugging
session never leaves the world blocked. While a rank is stopped, the workbench's timeouts do not
count the time (:mod:`mpiworkbench.trace.stops`).
"""

from __future__ import annotations

import contextlib
import json
import re
import os
import socket
import time
import warnings
from pathlib import Path
from typing import Any, Iterable

from mpiworkbench.client.calls import debug_records, kernel_proxy, lab_advice
from mpiworkbench.client.ranks.kernel import open_kernel
from mpiworkbench.client.calls.rank_debugger import (ASK_STOPPED_S, LATE_STOP_S, REQUEST_TIMEOUT_S, DebuggerError,
                                                     RankDebugger)
from mpiworkbench.trace import hang, stops

# ---------------------------------------------------------------------------- connection files
#: A rank's connection file's name, and how a reader (the lab's world sidebar) reads it back. The
#: world's generation is in it: a restarted world's ranks are new kernels, with new files (a lab
#: keeps what it read of a file by its name: one written again under the same name, between two of
#: its listings, was the old kernel to it, and a console on it never connected).
KERNEL_FILE = "mpiworkbench-{cluster}-g{generation}-rank{rank}.json"
KERNEL_FILE_PATTERN = re.compile(r"^mpiworkbench-(?P<cluster>.+)-g(?P<generation>\d+)-rank(?P<rank>\d+)\.json$")


def kernels_directory() -> Path:
    """Where the ranks' connection files go: JupyterLab's directory of external kernels
    (``<jupyter runtime dir>/external_kernels``, jupyter_server's default), so a lab started by
    ``mpiworkbench lab`` lists every rank as a running kernel."""
    return Path(lab_advice.runtime_dir()) / "external_kernels"


def proxied(wb, proxy: bool | None = None) -> bool:
    """Whether *wb*'s ranks' kernels are reached through the kernel proxy, over the controller
    (:mod:`.kernel_proxy`), rather than bound for Jupyter clients: always on a cluster secured with
    CurveZMQ (its engines connect from other hosts; Jupyter's protocol does not speak CurveZMQ,
    and such a cluster signs its messages with no key, so a bound kernel would run anyone's code),
    else as asked. (Not rank 0's *relay*, which hands calls on to the other ranks:
    :mod:`mpiworkbench.client.ranks.relay`.)"""
    return bool(getattr(wb.client, "curve_serverkey", None)) or bool(proxy)


def _proxy_asked(proxy: bool | None, relay: bool | None, caller: str) -> bool | None:
    """*proxy*, or the deprecated *relay* keyword that named it before (with a warning)."""
    if relay is None:
        return proxy
    warnings.warn(f"{caller}(relay=...) is now {caller}(proxy=...): 'relay' names rank 0's hand-on of calls "
                  "(mpiworkbench.client.ranks.relay), the kernel proxy over the controller is 'proxy'",
                  DeprecationWarning, stacklevel=3)
    return relay if proxy is None else proxy


def connection_files(wb, ranks: Iterable[int] | None = None, proxy: bool | None = None) -> dict[int, Path]:
    """Rank → its kernel's connection file, for every rank or *ranks*: the ranks' kernels are
    opened the first time (per engine set), a file is written for each rank asked for (a lab
    lists just those). Files are readable by their owner only: they hold a key.

    A rank's kernel is bound on its host and signed with the cluster's key, or, on a cluster
    secured with CurveZMQ (or with *proxy*), reached through a kernel proxy on this host's
    loopback that carries its messages over the cluster's own channels (:func:`proxied`).
    Without *proxy*, the way the session's ranks were opened before is kept."""
    connection = wb._connection
    known = connection.rank_kernels
    if proxy is None and known:  # as the session's ranks were opened (%%px --debug after proxy=True)
        proxy = known[0][1]
    through = proxied(wb, proxy)
    # per engine set (each is taken with a view of its own: a restart reuses the engine ids)
    key = (connection.view, through)
    if not known or known[0] != key:
        remove_connection_files(connection)  # of a world restarted meanwhile
        known = connection.rank_kernels = (key, wb.run(open_kernel, not through), {})
    _, infos, files = known
    cluster = getattr(wb.cluster, "cluster_id", "") or "cluster"
    wanted = range(len(infos)) if ranks is None else list(ranks)
    proxies = kernel_proxy.open_proxies(wb, wanted) if through else {}
    for rank in wanted:
        info = {**infos[rank], **proxies[rank].info} if rank in proxies else infos[rank]
        if rank not in files or files[rank][1] != info or not files[rank][0].exists():
            directory = kernels_directory()
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / KERNEL_FILE.format(cluster=cluster, generation=connection.generation or 0, rank=rank)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(info, f, indent=1)
            files[rank] = (path, info)
    return {rank: files[rank][0] for rank in wanted}


def remove_connection_files(connection) -> None:
    """Remove the files :func:`connection_files` wrote for *connection* (a session's), and end
    the proxies it started (the session stops, leaves the connection, or its world ends)."""
    known, connection.rank_kernels = connection.rank_kernels, None
    for path, _info in (known[2].values() if known else ()):
        with contextlib.suppress(OSError):
            path.unlink()
    kernel_proxy.close_proxies(connection)


# ---------------------------------------------------------------------------- all ranks
class Debugging:
    """The debuggers of some ranks of a world, started (what ``wb.debug()`` returns).

    >>> with wb.debug() as dbg:                       # doctest: +SKIP
    ...     dbg.break_in_cell(code, 4)                # every rank stops at line 4 of this cell
    ...     running = wb.execute_async(code)          # or a %%px cell in another thread
    ...     dbg.wait_stopped()                        # {rank: "cell line 4"}
    ...     dbg[1].variables()["rank"]                # '1'
    ...     dbg[1].next(); dbg[1].wait_for("stopped")
    ...     dbg.continue_()                           # leaving the block continues every rank
    """

    def __init__(self, files: dict[int, Path], timeout: float = REQUEST_TIMEOUT_S, session=None):
        self.session = session
        self.running = None
        self.ranks: dict[int, RankDebugger] = {}
        # recorded in the world's directory while it lasts: if this process dies meanwhile, the
        # next client lets the ranks go (calls/debug_records.py)
        self.record = debug_records.hold(session, files) if session is not None else None
        try:
            for rank in sorted(files):
                debugger = RankDebugger(rank, files[rank], timeout, note=self.record.note if self.record else None)
                try:
                    debugger.start()
                except BaseException:  # an interrupt included: what it began is ended
                    debugger.abandon()
                    raise
                self.ranks[rank] = debugger
        except BaseException:
            self.close()
            raise

    def __getitem__(self, rank: int) -> RankDebugger:
        return self.ranks[rank]

    def __enter__(self) -> "Debugging":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _each(self, ranks: Iterable[int] | None) -> list[RankDebugger]:
        return [self.ranks[r] for r in (sorted(self.ranks) if ranks is None else ranks)]

    def break_in_cell(self, code: str, *lines: int, ranks: Iterable[int] | None = None) -> dict[int, list[int]]:
        """Breakpoints at *lines* (1 = the cell's first line) of the ``%%px`` cell *code* on
        every rank debugged (or *ranks*); rank → the lines taken."""
        return {d.rank: d.set_breakpoints(d.cell_path(code), lines) for d in self._each(ranks)}

    def break_at(self, where: Any, *lines: int, ranks: Iterable[int] | None = None) -> dict[int, list[int]]:
        """Breakpoints in a package module: *where* is its file, or a function (with no
        *lines*: its first line of code)."""
        import inspect

        if callable(where):
            path = inspect.getsourcefile(where)
            lines = lines or (where.__code__.co_firstlineno + 1,)
        else:
            path = str(where)
        if not lines:
            raise ValueError(f"name the lines of {path} to stop at")
        return {d.rank: d.set_breakpoints(path, lines) for d in self._each(ranks)}

    def execute(self, code: str):
        """Run *code* on every rank of the world as a ``%%px`` cell does, without waiting (the
        ranks stop at the breakpoints meanwhile); :meth:`finish` waits for it."""
        wb = self.session
        first = next((line.strip() for line in code.splitlines() if line.strip()), "")
        self.running = wb.submit(f"{wb.activity or 'debugging'}: {first[:60]}",
                                 lambda: wb.view.execute(code, silent=False, block=False))
        self.running.announces_start = True
        return self.running

    def finish(self) -> None:
        """Wait for the code :meth:`execute` runs (hang-protected; a failure raises
        :class:`~mpiworkbench.client.errors.RankFailure`)."""
        running, self.running = self.running, None
        if running is not None:
            self.session.wait_explained(running, self.session.timeout)

    def wait_stopped(self, ranks: Iterable[int] | None = None, timeout: float | None = None) -> dict[int, dict[str, Any]]:
        """Wait until every rank debugged (or *ranks*) has stopped; rank → its innermost frame
        (``name``, ``line``, ``source``)."""
        found = {}
        for d in self._each(ranks):
            if d.stopped is None:
                d.wait_for("stopped", timeout)
            found[d.rank] = d.stack()[0]
        return found

    def where(self) -> dict[str, list[int]]:
        """The stopped ranks grouped by where they stopped (``"cell line 4"`` → ``[0, 1]``)."""
        groups: dict[str, list[int]] = {}
        for d in self._each(None):
            d._drain(0)
            if d.stopped is not None:
                groups.setdefault(stops.where_text({"where": d.place()}), []).append(d.rank)
        return groups

    def continue_(self, ranks: Iterable[int] | None = None) -> None:
        """Continue every stopped rank (or *ranks*): all are sent ``continue`` before any answer
        is awaited — a rank that runs into a collective its peers have not reached yet may hold
        Python's lock inside it (mpi4py's pickle-based ``allreduce`` does), and answers only
        once they arrive."""
        sent = []
        for d in self._each(ranks):
            d._drain(0)
            if d.stopped is not None:
                sent.append((d, d._move("continue", wait=False)))
        for d, msg_id in sent:
            d.response(msg_id, "continue")

    def close(self) -> None:
        """Clear every breakpoint, continue every rank from wherever it is and detach: the world
        runs on, the ranks keep their state. Each step goes to every rank before the next, and no
        rank's answer is awaited before every rank has been asked (see :meth:`continue_`):

        1. every breakpoint dropped, and each rank's debugger asked what it holds stopped;
        2. each rank that answers (a stopped rank answers at once) continued if it is stopped —
           at a breakpoint, after Next or Step, paused, wherever: the debugger's own state says
           (:meth:`~.RankDebugger.stopped_threads`), not the events this client saw; a rank busy
           in MPI answers once the others run on, and is judged then;
        3. for a moment, any stop still under way (a rank reaching a breakpoint just as the
           breakpoints went) continued too (:meth:`~.RankDebugger.late_stops`).
        """
        errors = []
        if self.running is not None and self.session is not None:  # (left by an exception: judged by the next call)
            self.session.calls.left_running(self.running)
        debuggers, self.ranks = list(self.ranks.values()), {}
        sent: dict[RankDebugger, list[tuple[str, str]]] = {d: [] for d in debuggers}
        asked: dict[RankDebugger, str] = {}

        def each(step, ds) -> None:
            for d in ds:
                try:
                    step(d)
                except Exception as exc:  # noqa: BLE001 - every rank gets the step, then say what failed
                    errors.append(f"rank {d.rank}: {exc}")
                    asked.pop(d, None)

        def ask(d: RankDebugger) -> None:
            sent[d] += d.drop_breakpoints()
            asked[d] = d.ask_stopped()

        busy: list[RankDebugger] = []

        def let_go(d: RankDebugger, timeout: float) -> None:
            threads = d.stopped_threads(asked[d], timeout)
            if threads is None:
                if timeout < d.timeout:
                    busy.append(d)  # asked again once the others run on
                    return
                raise DebuggerError(f"said nothing of its stops in {d.timeout:.0f} s")
            sent[d] += d.continue_threads(threads)

        each(ask, debuggers)
        each(lambda d: let_go(d, ASK_STOPPED_S), [d for d in debuggers if d in asked])
        each(lambda d: let_go(d, d.timeout), busy)
        deadline = time.monotonic() + LATE_STOP_S
        each(lambda d: sent[d].extend(d.late_stops(deadline)), debuggers)

        def finish(d: RankDebugger) -> None:
            for msg_id, command in sent[d]:
                d.response(msg_id, command)
            d.detach()

        each(finish, debuggers)
        for d in debuggers:
            d.client.stop_channels()
        record, self.record = self.record, None
        if record is not None:
            record.let_go()
        if errors:
            raise DebuggerError("detaching the debugger: " + "; ".join(errors))


class RankDebugging:
    """Debugging the ranks of a started session: the session holds one and hands its methods on
    (``wb.debug`` is ``RankDebugging.debug``)."""

    def __init__(self, session) -> None:
        self.session = session
        self._advised = False

    def connection_file(self, rank: int, proxy: bool | None = None, *, relay: bool | None = None) -> Path:
        """The Jupyter connection file of *rank*'s kernel: any Jupyter client (a console,
        ``jupyter console --existing FILE``, JupyterLab's running kernels when started by
        ``mpiworkbench lab``) can use the rank through it, and JupyterLab's debugger debug it.
        With *proxy* (always on a cluster secured with CurveZMQ), the rank is reached through
        the controller from this host's loopback (:mod:`mpiworkbench.client.calls.kernel_proxy`).
        (*relay* is *proxy*'s former name, deprecated.)"""
        self.session.engine_of(rank)  # says which ranks exist
        path = connection_files(self.session, [rank], _proxy_asked(proxy, relay, "connection_file"))[rank]
        if not self._advised:  # once a session: a lab without the sidebar does not list the file
            self._advised = True
            missing = lab_advice.advice({rank: path})
            if missing:
                print(missing)
        return path

    def debug(self, ranks: Iterable[int] | None = None, proxy: bool | None = None, *,
              relay: bool | None = None) -> Debugging:
        """Start the debugger on every rank (or *ranks*): see :class:`Debugging`. Leave the
        ``with`` block (or call ``close()``) to continue every rank and detach. *proxy*: see
        :meth:`connection_file` (*relay*: its former name, deprecated)."""
        for rank in ranks or ():
            self.session.engine_of(rank)  # says which ranks exist
        return Debugging(connection_files(self.session, ranks, _proxy_asked(proxy, relay, "debug")),
                         session=self.session)

    def stops(self) -> dict[int, dict[str, Any]]:
        """Rank → its stop record (where it stopped), for the ranks stopped in a debugger now
        (ranks on this host; see :mod:`mpiworkbench.trace.stops`)."""
        found = {}
        for rank, stop in debug_records.stop_records(self.session).items():
            if stops.is_stopped(stop):
                found[rank] = stop
        return found

    def where(self) -> list[str]:
        """Where every rank is, a line each: stopped in the debugger (and where), waiting in an
        MPI call (which, for whom), or running — what the control panel shows while you debug."""
        session = self.session
        processes = getattr(session, "_rank_processes", {}) or {}
        here = socket.gethostname()
        records = debug_records.stop_records(session)
        activity = "running" if session.state in ("busy", "debugging", "blocked") else "idle"
        lines = []
        for rank in sorted(set(session.ranks.values())):
            stop = records.get(rank)
            info = processes.get(rank) or {}
            if stops.is_stopped(stop):
                lines.append(stops.describe(rank, stop))
                continue
            inflight = hang.read_slot(info["pid"]) if info.get("host") == here and "pid" in info else None
            if inflight is not None and inflight.call is not None:
                lines.append(f"rank {rank} waiting in {inflight.describe()}")
            else:
                lines.append(f"rank {rank} {activity}")
        return lines


def paused_since(wb, since: float) -> tuple[float, bool]:
    """How long (seconds, the most of any rank) the ranks have been stopped in a debugger since
    *since* (``time.monotonic()``), and whether one is stopped now: what a call's timeout does
    not count."""
    records = debug_records.stop_records(wb)
    if not records:
        return 0.0, False
    now = time.monotonic()
    paused = max(stops.paused_within(r, since, now) for r in records.values())
    return paused, any(stops.is_stopped(r) for r in records.values())
