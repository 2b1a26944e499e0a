"""How code runs on a session's engines: every rank at once, results in rank order, never
frozen by a failed collective (see :mod:`mpiworkbench.client.calls.waiting`), and in one order
with every other client of the same MPI world: every execution is submitted by
:meth:`Executor.submit`, which takes the world's turn (:mod:`mpiworkbench.client.calls.turns`)."""

from __future__ import annotations

import os
import time
import uuid
from operator import itemgetter
from typing import Any, Callable

from mpiworkbench import backends
from mpiworkbench.client.calls import debug_records, relayed as relayed_calls, restarts
from mpiworkbench.client.cluster import health
from mpiworkbench.client.ranks import arrays, relay
from mpiworkbench.client.history import drop
from mpiworkbench.client.calls.call import Call
from mpiworkbench.client.calls.journal import Journal, outcome_of
from mpiworkbench.client.calls.debugging import paused_since
from mpiworkbench.client.calls.postmortem import PostMortem
from mpiworkbench.client.calls.left import Left
from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, WorldDied, WorldRestarted
from mpiworkbench.client.calls.remote import RemoteObject
from mpiworkbench.client.calls.trace import arm_engines, explain_timeout
from mpiworkbench.client.calls.waiting import wait_ranks
from mpiworkbench.core import machine, objects, postmortem

#: The environment variable that sets :data:`DEFAULT_TIMEOUT_S` for every session of a process
#: (a grader sets it for the notebooks it runs: :mod:`mpiworkbench.course`).
TIMEOUT_VARIABLE = "MPIWORKBENCH_TIMEOUT"


def _default_timeout(text: str | None) -> float:
    if text is None:
        return 120.0
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{TIMEOUT_VARIABLE}={text!r} is not a positive number of seconds; set it to "
                         f"e.g. 120, or unset it for the default")
    return value


#: Seconds an execution may take before the workbench reports it as hung: 120, or
#: ``$MPIWORKBENCH_TIMEOUT`` when set.
DEFAULT_TIMEOUT_S = _default_timeout(os.environ.get(TIMEOUT_VARIABLE))
#: When this environment variable is ``1``, a session's calls behind its own work that outlived
#: its timeout are refused at once (``WorldBlocked``) instead of waiting their turn behind it:
#: a grader sets it, so that the rest of a submission that deadlocked fails fast.
REFUSE_AFTER_HANG_VARIABLE = "MPIWORKBENCH_REFUSE_AFTER_HANG"
#: What a call on a session that has no engines is told.
NOT_STARTED = "the workbench is not running; call wb.start() first"


class Executor:
    """Running code on the engines of a started session: what ``wb.run``, ``%%px``, a pull, a
    push and a post-mortem do. The session holds one and hands its methods on (``wb.run`` is
    ``Executor.run``); the executor reads the session's settings (``timeout``,
    ``failure_grace``, ``activity``, ``n``) and its :class:`~mpiworkbench.client.calls.connection.Connection`,
    and calls nothing of the session back."""

    def __init__(self, session) -> None:
        self.session = session
        #: The call of ours whose wait was given up while it still ran on the ranks, if any.
        self.left = Left()
        #: What the ranks ran, in order: what ``wb.export_job`` saves (:mod:`~mpiworkbench.client.calls.journal`).
        self.journal = Journal()

    def world(self) -> int:
        """The engine set calls go to now (a restart makes another): what the journal files them under."""
        connection = self.session._connection
        return id(connection.view) if connection is not None else 0

    def _kept(self, func: Callable[..., Any], args: tuple, kwargs: dict, label: str, send: Callable[[], Call]) -> Call:
        """*send* a call of *func* on every rank, kept in the journal (its outcome once it ends)."""
        entry = self.journal.call(func, args, kwargs, label, self.world())
        try:
            call = send()
        except BaseException as exc:
            self.journal.ended(entry, outcome_of(exc), str(exc))
            raise
        call.entry = entry
        return call

    def _connected(self):
        """The session's connection, with its engines; says how to start it otherwise."""
        connection = self.session._connection
        if connection is None or connection.view is None:
            raise RuntimeError(NOT_STARTED)
        return connection

    def _require_running(self, changed: bool | None = None, connection=None):
        """Refuse a call on a restarted or dead world; the session's connection otherwise.
        *changed*: whether the world's record changed since we last looked, when the caller
        already knows (taking the turn tells: :meth:`Turns.acquire`); else it is read here.
        *connection*: the session's, when the caller has it."""
        session = self.session
        connection = connection or self._connected()
        if changed is None:
            changed = connection.turns is not None and connection.turns.world_changed()
        if changed:
            restarted = restarts.follow(session)
            if restarted:
                raise WorldRestarted(restarted)
            connection = session._connection  # (following a restart may have attached anew)
        if not health.world_died(connection.cluster, connection.client, session.n):
            return connection
        ended = health.how_it_ended(connection.cluster, connection.client, connection.ranks, connection.hosts)
        raise WorldDied(f"the MPI world has died: {ended or 'a rank was killed, aborted or crashed'}. "
                        "Call wb.restart() for a fresh one; wb.world_log() shows what mpiexec and the "
                        "controller wrote.")

    def submit(self, label: str, send: Callable[..., Any], keep: bool = False, relayed: bool = False) -> Call:
        """The one way work reaches the ranks: take the world's turn (waiting, visibly, while
        another client's work runs), check the world is still the one we know and alive, arm the
        hang report, call *send* (which submits to the engines and returns an ``AsyncResult``) and
        hold the turn until that has finished on every rank; the
        :class:`~mpiworkbench.client.calls.call.Call` it makes. *label* says what it is to the
        clients waiting for it. With *relayed*, *send* is given rank 0's relay view
        (:meth:`relay_view`) and sends one message through it for every rank, one reply back
        (``send(view)``: ``view.apply_async(relay.fan_out, relay.call, …)``).

        The world is checked holding the turn: a restart by another client holds it too, so a
        call waits behind a restart under way and then learns of it (``WorldRestarted``).

        Once finished, the call is dropped from ipyparallel's histories (:func:`~mpiworkbench.client.history.drop`):
        a session's memory is bounded by what its user keeps, not by how many frames, runs
        and polls it made. With *keep* (a user's ``%%px``) it stays, as ipyparallel keeps it;
        ``wb.client.history.clear()`` drops those."""
        session = self.session
        connection = session._connection
        if connection is None or connection.view is None:
            raise RuntimeError(NOT_STARTED)
        world = connection.turns
        changed = world.acquire(label, session.timeout) if world is not None else None
        try:
            connection = self._require_running(changed, connection)
            if world is not None and world.inherited:  # its last holder died holding it: maybe debugging
                world.inherited = False
                debug_records.release_orphans(session)
            if self.left.call is not None:  # a call of ours whose wait was interrupted: judged first
                self.left.judge(self)
            # one multi-engine call goes out whole before another thread's (a Play thread and
            # a cell): ipyparallel queues each engine's message on its I/O thread separately,
            # so two threads' calls could otherwise reach the engines in different orders
            with connection.sending:
                if connection.armed_for is not connection.view:  # once per engine set (a new one, a new view)
                    arm_engines(connection)
                found = connection.relay
                through = None
                if relayed:  # rank 0's relay view (the first call opens the relay)
                    through = found[1] if found is not None and found[0] is connection.view else self.relay_view()
                since = time.monotonic()  # (before: on busy cores a rank can run its first sends before send() returns)
                ar = send(through) if relayed else send()
        except BaseException:
            if world is not None:
                world.release()
            raise
        if relayed:  # its output and the ranks' notices end with the one reply
            client = connection.client
            ar.add_done_callback(lambda _f: relayed_calls.end(client, ar))
        histories = () if keep else (connection.client.history, connection.view.history,
                                     *([through.history] if through is not None else []))
        return Call(ar, label, since, relayed, through, turns=world, histories=histories)

    def run_async(self, func: Callable[..., Any], *args: Any, **kwargs: Any):
        """Submit ``func(*args, **kwargs)`` on every rank without waiting.

        Returns
        -------
        Call
            The pending call (:class:`~mpiworkbench.client.calls.call.Call`); finish it with
            :meth:`gather` (hang-protected).
        """
        label = f"{self.session.activity or 'wb.run'}: {getattr(func, '__name__', 'a function')}"
        return self._kept(func, args, kwargs, label, lambda: self.submit(
            label, lambda view: view.apply_async(relay.fan_out, relay.call, func, args, kwargs), relayed=True))

    def relay_view(self):
        """The view that calls on every rank go through: rank 0's engine, which hands each call
        to the other ranks (one message out, one reply back a call, whatever the world's size:
        :mod:`~mpiworkbench.client.ranks.relay`), made anew with the view. The first use opens the
        relay on every rank (a collective: call it holding the world's turn)."""
        connection, timeout = self.session._connection, self.session.timeout
        found = connection.relay
        if found is None or found[0] is not connection.view:
            ar = connection.view.apply_async(relay.open_relay)
            try:
                if not ar.wait(timeout):
                    raise RuntimeError(f"the ranks did not open rank 0's relay within {timeout} s (wb.timeout); "
                                       f"wb.state says what the world is doing")
                ar.get()
            finally:
                drop(ar, (connection.client.history, connection.view.history))
            found = connection.relay = (connection.view, relayed_calls.relay_view(connection.client, self.engine_of(0)))
        return found[1]

    def gather(self, call: Call, timeout: float | None | str = "default") -> list[Any]:
        """Wait for *call* (hang-protected) and return its results in rank order.

        Parameters
        ----------
        call : Call
            A call of :meth:`run_async` (or of :meth:`submit`).
        timeout : float or None, optional
            Seconds to wait; the session's :attr:`timeout` by default, ``None`` forever.

        Raises
        ------
        RankFailure, ExecutionTimeout
            As :meth:`run`.
        """
        self._waited(call, self.session.timeout if timeout == "default" else timeout)
        if not call.relayed:
            return list(call.ar.get())
        return [reply[2] for reply in sorted(call.ar.get(), key=itemgetter(0))]  # (rank, "ok", value)

    def _waited(self, call: Call, timeout: float | None) -> None:
        """:meth:`wait_explained`, and the call's journal entry ended with how it went."""
        try:
            self.wait_explained(call, timeout)
        except BaseException as exc:
            self.journal.ended(call.entry, outcome_of(exc), str(exc))
            raise
        self.journal.ended(call.entry, "ok")

    def wait_explained(self, call: Call, timeout: float | None, raise_failures: bool = True,
                       started: float | None = None, grace: float | None = None, explain: bool = True):
        """Each rank's status once *call* has finished (a call on every rank has one reply, rank
        0's: :func:`~mpiworkbench.client.calls.relayed.wait`; another, one part per engine:
        :func:`~mpiworkbench.client.calls.waiting.wait_ranks`); on a timeout the hang report:
        where each rank is blocked and the likely cause (:func:`~mpiworkbench.client.calls.trace.explain_timeout`).
        With *explain* false, the bare :class:`ExecutionTimeout` (who had finished), at once."""
        origin = time.monotonic() if started is None else started
        grace = self.session.failure_grace if grace is None else grace
        while True:
            try:
                connection = self.session._connection
                if call.relayed:
                    relayed_calls.wait(connection.client, call.ar, connection.ranks, timeout, grace, started,
                                       probe=connection.view)
                    statuses = relayed_calls.statuses(call.ar, connection.ranks)
                else:
                    statuses = wait_ranks(call.ar, connection.ranks, timeout, raise_failures=False, started=started,
                                          grace=grace)
                break
            except KeyboardInterrupt:
                self.left_running(call)
                raise
            except ExecutionTimeout as exc:
                if not explain:
                    raise
                # the time a rank spent stopped in a debugger does not count: it is not hung; a
                # rank that failed while others still run ends the wait after the grace, as it says
                paused, stopped_now = paused_since(self.session, origin)
                within = not exc.failed and time.monotonic() - (origin + paused) < timeout if timeout else False
                if timeout is None or not (stopped_now or within):
                    report = explain_timeout(self.session, exc, call)
                    call.mark_blocked("\n".join([*(s.line() for s in report.statuses), *report.hang_lines,
                                                  *(f"  likely: {c}" for c in report.causes)]))
                    raise report from None
                started = origin + paused
                if stopped_now:  # still stopped: look again in a second at the latest
                    debug_records.release_orphans(self.session)  # (unless its debugging client died)
                    started = max(started, time.monotonic() - timeout + 1.0)
        call.finish()
        if raise_failures and any(s.state == "failed" for s in statuses):
            raise RankFailure(statuses)
        return statuses

    def left_running(self, call: Call) -> None:
        """The caller gives up waiting for *call* (an interrupt, a debugging session left): when
        it still runs on the ranks, the next call first looks at what it left (:class:`~.left.Left`)."""
        self.left.leave(call, self.session.view)

    def run(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Run ``func(*args, **kwargs)`` on every rank and wait for it.

        Returns
        -------
        list
            Every rank's return value, in rank order.

        Raises
        ------
        RankFailure
            Every rank finished and some raised (a rank-by-rank report).
        ExecutionTimeout
            Ranks still running after :attr:`timeout` (a rank-by-rank report).
        """
        return self.gather(self.run_async(func, *args, **kwargs))

    def execute(self, code: str) -> None:
        """Execute *code* in every engine's namespace (what ``%%px`` does), hang-protected."""
        first = next((line.strip() for line in code.splitlines() if line.strip()), "")
        session = self.session
        self.wait_explained(self.submit(f"{session.activity or 'wb.execute'}: {first[:60]}",
                                        lambda: session.view.execute(code, block=False)), session.timeout)

    def interrupt(self, signal: str = "SIGINT") -> None:
        """Send *signal* to every engine (wakes Python code, not a blocked MPI call)."""
        self._require_running()
        self.session.client.send_signal(signal, targets=list(self.session.ranks), block=True)

    def pull(self, name: str, rank: int = 0) -> Any:
        """The value of *name* in one rank's namespace (gather to that rank with MPI first)."""
        session, engine = self.session, self.engine_of(rank)
        call = self.submit(f"{session.activity or 'wb.pull'}: {name}", lambda: session.client[engine].pull(name, block=False))
        self.wait_explained(call, session.timeout)
        return call.ar.get()

    def _stage(self, value: Any) -> None:
        """Send *value* to rank 0's engine, in the world's turn (one transfer), for
        :func:`~mpiworkbench.client.ranks.arrays.spread` to hand to every rank."""
        session, engine = self.session, self.engine_of(0)
        label = f"{session.activity or 'wb.push'}: to rank 0"
        # kept as what it amounts to on the ranks: rank 0 holds the value (arrays.stage)
        call = self._kept(arrays.stage, (value,), {}, label, lambda: self.submit(
            label, lambda: session.client[engine].push({arrays.STAGING: value}, block=False)))
        self._waited(call, session.timeout)

    def push(self, name: str, value: Any) -> None:
        """Bind *name* to *value* on every rank: one transfer to rank 0, then ``MPI.Bcast``
        (a NumPy array; anything else is pickled once and broadcast) — not one copy per rank
        through the controller, as ``wb.view.push`` sends."""
        self._stage(value)
        self.run(arrays.spread, name, "bcast")

    def scatter(self, name: str, array: Any) -> list[tuple]:
        """Bind *name* on each rank to its rows of *array* (split along axis 0, the first ranks one
        row more when uneven): one transfer to rank 0, then ``MPI.Scatterv``. Returns each rank's
        shape, in rank order."""
        self._stage(array)
        return self.run(arrays.spread, name, "scatter")

    def collect(self, name: str) -> Any:
        """Every rank's *name* joined by rows (axis 0) in rank order: ``MPI.Gatherv`` to rank 0,
        which alone sends its array back."""
        return self.run(arrays.collect_rows, name)[0]

    def post_mortem(self, rank: int) -> PostMortem:
        """The last exception raised on *rank* — by a ``%%px`` cell or :meth:`run` — frame by
        frame from your code to the raise, with each frame's local variables (in a cell, the
        names the failing statement uses): ``print(wb.post_mortem(2))``, ``wb.post_mortem(2).locals``.

        The frames stay on the rank (IPython keeps its last exception until the next one, which
        may come from any client of a shared world); only their summary is sent back. The other
        ranks' state when it failed is what the :class:`RankFailure` or hang report said.
        """
        session, engine = self.session, self.engine_of(rank)
        call = self.submit(f"{session.activity or 'wb.post_mortem'}: rank {rank}",
                           lambda: session.client[engine].apply_async(postmortem.last_failure))
        self.wait_explained(call, session.timeout)
        found = call.ar.get()
        return PostMortem(rank, **found) if found else PostMortem(rank)

    def engine_of(self, rank: int) -> int:
        """The engine id of *rank*; names the ranks there are when it is not one of them."""
        engines = {r: e for e, r in self._connected().ranks.items()}
        if rank not in engines:
            raise ValueError(f"rank {rank!r} is not a rank of this world (ranks 0 to {len(engines) - 1}); "
                             "name one of them")
        return engines[rank]

    # ------------------------------------------------------------------ remote objects
    def create(self, factory: str, *args: Any, nranks: int | None = None, **kwargs: Any) -> "RemoteObject":
        """Build ``factory(*args, **kwargs)`` on every engine and return a handle to it.

        Parameters
        ----------
        factory : str
            ``"module:callable"``, imported on the engines, called with the communicator
            (``comm=``) besides *args* and *kwargs*.
        nranks : int, optional
            Build it on a sub-communicator of the first *nranks* ranks only.

        Returns
        -------
        RemoteObject
        """
        self._require_running()
        key = f"obj-{uuid.uuid4().hex[:10]}"
        holds = self.run(objects.create, key, factory, args, kwargs, nranks)
        return RemoteObject(self.session, key, factory, holds)

    # ------------------------------------------------------------------ facts
    def info(self) -> list[dict[str, Any]]:
        """Per-rank facts: rank, host, pid, thread level (rank order)."""
        return self.run(machine.rank_info)

    def environment(self) -> dict[str, Any]:
        """The engines' environment (MPI library, versions, hosts, cores, backends), from rank 0."""
        return self.run(backends.environment)[0]
