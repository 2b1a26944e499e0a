"""What a session holds while it is connected to a cluster, in one object.

A :class:`Connection` is made when a session starts or attaches and dropped whole when it
stops, detaches or follows a restart to a new controller: a session is connected exactly
when it has one, and no field is ever cleared by hand.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.client.cluster import attach, engines, health, stop
from mpiworkbench.client.errors import EnginesNotStarted, WorldBusy
from mpiworkbench.client.cluster.watchdog import stop_watchdog
from mpiworkbench.client.calls.clients import ClientInfo
from mpiworkbench.client.calls.trace import arm_engines
from mpiworkbench.client.calls.turns import Turns, exclusive_use
from mpiworkbench.client.cluster.record import world_directory


@dataclass(eq=False)
class Connection:
    """A session's cluster and everything it learnt of it.

    Attributes
    ----------
    cluster : ipyparallel.Cluster
        The cluster (started by the session, or found from its cluster file).
    owns_cluster : bool
        Whether the session started it (and so stops it): False when attached.
    client : ipyparallel.Client or None
        The client connected to its controller (None for the moment it takes to connect).
    turns : Turns or None
        The session's place in the cluster's shared MPI world (:mod:`~mpiworkbench.client.calls.turns`).
    watchdog : subprocess.Popen or None
        The process that ends the cluster if this kernel dies (own clusters only).
    view : ipyparallel.DirectView or None
        All engines in rank order; None while the rank map is being made.
    ranks : dict
        Engine id → MPI rank.
    hosts : dict
        MPI rank → the host it runs on.
    generation : object
        The generation of the engine set last connected to (a restart makes a new one).
    relay : tuple or None
        ``(view, rank 0's relay view)``: what :meth:`Executor.run_async` and ``%%px`` send through
        (made on first use, anew when ``view`` is replaced).
    sending : threading.Lock
        Held while a call goes out, so that one multi-engine call leaves whole before another
        thread's (a panel's Play thread and a cell).
    armed_for : object
        The view of the engine set the ranks' hang reports were armed for (a new engine set, a new view, is armed again).
    rank_processes : dict
        Rank → its process as armed (pid, host, …): what hang reports and :meth:`where` read.
    rank_kernels : tuple or None
        ``(key, infos, files)``: the ranks' kernels opened for Jupyter clients, and the
        connection files written for them (:mod:`~mpiworkbench.client.calls.debugging`).
    kernel_proxies : Proxies or None
        The proxies of ranks reached through the controller (:mod:`~mpiworkbench.client.calls.kernel_proxy`).
    """

    cluster: Any
    owns_cluster: bool
    client: Any = None
    turns: Turns | None = None
    watchdog: Any = None
    view: Any = None
    ranks: dict[int, int] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)
    generation: Any = None
    relay: tuple[Any, Any] | None = None
    sending: threading.Lock = field(default_factory=threading.Lock)
    armed_for: Any = None
    rank_processes: dict[int, dict[str, Any]] = field(default_factory=dict)
    rank_kernels: tuple[Any, Any, Any] | None = None
    kernel_proxies: Any = None

    def open_turns(self, refuse_own_blocked: bool) -> None:
        """Take this client's place among the world's clients (:class:`Turns`, in the world's
        directory beside the cluster's files)."""
        directory = world_directory(self.cluster.profile_dir, self.cluster.cluster_id)
        self.turns = Turns(directory, ClientInfo.here(self.client.session.session), refuse_own_blocked=refuse_own_blocked)

    def connect_engines(self, n: int, timeout: float | None, fresh: bool, restarted: bool, thread_level: str | None,
                        mpi: str) -> dict[str, Any]:
        """The engine set of the *n* engines, taken (:meth:`take_engine_set`): read from the world's
        record when it describes these very engines (an attach never waits for busy ranks), asked of
        the engines otherwise (:meth:`ask_engines`: within the cluster's engine timeout on a cluster
        of ours or a restart, within the session's *timeout* on a cluster started elsewhere)."""
        known = None if fresh or restarted else self.engine_set(n)
        if known is None:
            limit = self.cluster.engine_timeout if self.owns_cluster or restarted else timeout
            known = self.ask_engines(n, limit, restarted, thread_level, mpi)
        if self.turns is not None:
            self.turns.changed_since_seen()  # the record just read or written is seen
        self.take_engine_set(known)
        if fresh or restarted:  # new ranks' processes recorded at once: the lab's world sidebar
            arm_engines(self)   # shows them idle within seconds of a start or restart, not "unknown"
        return known

    def take_engine_set(self, known: dict[str, Any]) -> None:
        """Take an engine set of :meth:`engine_set` or :meth:`ask_engines` (rank map, hosts,
        generation) and make the view of its engines in rank order."""
        self.ranks, self.hosts, self.generation = known["ranks"], dict(known.get("hosts") or {}), known.get("generation")
        self.view = self.client.direct_view(sorted(self.ranks, key=self.ranks.__getitem__))
        self.view.block = True

    def release(self, remove_world: bool) -> None:
        """Let the world go (*remove_world*: delete its shared directory, the cluster being
        stopped) and close the client; the cluster itself is left as it is."""
        if self.turns is not None:
            self.turns.remove() if remove_world else self.turns.close()
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()

    def close(self, stop_cluster: bool, log_level: int) -> str:
        """Release the connection and, when *stop_cluster*, stop the engines and controller;
        the watchdog is ended last, so that a kernel killed meanwhile leaves nothing either.
        Returns what was done, in a sentence."""
        try:
            self.release(remove_world=stop_cluster)
            if not stop_cluster:
                return (
                    "detached; the cluster keeps running for whoever started it (stop it with "
                    "wb.stop(cluster=True), `ipcluster stop`, or the IPython Parallel sidebar)"
                )
            with attach.acting_on(self.cluster, attached=not self.owns_cluster):
                stop.stop_cluster(self.cluster, log_level, self.client)
            return "stopped the engines and the controller"
        finally:
            stop_watchdog(self.watchdog)

    def engine_set(self, n: int) -> dict[str, Any] | None:
        """The world's record of its engine set, when it still describes this client's *n* engines:
        ``ranks`` (engine → rank), ``thread_level``, ``hosts`` (rank → host), ``mpi``,
        ``generation``; None when the engines are another set (restarted, or a new cluster of
        the same id) or nothing is recorded."""
        record = self.turns.engine_set() if self.turns is not None else None
        if not record:
            return None
        self.client.ids  # noqa: B018 - takes in the controller's news of engines (re)registered
        uuids = upstream.engine_identities(self.client)
        engines = {int(e): tuple(v) for e, v in (record.get("engines") or {}).items()}
        if len(engines) != n or any(uuids.get(e) != u for e, (_rank, u) in engines.items()):
            return None
        return {
            "ranks": {e: rank for e, (rank, _u) in engines.items()},
            "thread_level": record.get("thread_level"),
            "hosts": {int(rank): host for rank, host in (record.get("hosts") or {}).items()},
            "mpi": record.get("mpi"),
            "generation": record.get("generation"),
        }

    def ask_engines(self, n: int, limit: float | None, restarted: bool, thread_level: str | None,
                    mpi: str) -> dict[str, Any]:
        """Ask the *n* engines for the rank map (waiting at most *limit* seconds for the world's
        turn and their answers), record it in the world for the other clients, and return it as
        :meth:`engine_set` does. *thread_level* and *mpi* are what the session asked for: an
        own cluster keeps them, an attached one takes the engines'.

        Raises
        ------
        WorldBusy
            The ranks did not answer in time (busy with someone's work, or blocked in MPI).
        EnginesNotStarted
            The engines of a cluster this session started did not all register in time.
        """
        try:
            with exclusive_use(self.turns, "connecting to the ranks", limit):
                gone = (lambda: health.engines_exited(self.cluster)) if self.owns_cluster else None
                infos = engines.rank_map(self.client, n, timeout=limit, gone=gone)
        except TimeoutError as exc:
            if isinstance(exc, WorldBusy):
                raise
            registered = len(self.client.ids)
            if isinstance(exc, engines.LauncherEnded):  # they refused, or failed, at their start
                raise EnginesNotStarted(f"{exc}.\n{health.launcher_report(self.cluster)}\nThe engines' output "
                                        "above says why.") from None
            if self.owns_cluster and registered < n:  # nobody's work: the launch went wrong
                raise EnginesNotStarted(
                    f"{registered} of the {n} engines registered with the controller within {limit} s "
                    f"(Cluster.engine_timeout).\n{health.launcher_report(self.cluster)}\nThe engines' output above "
                    "says why when they failed; on a machine this loaded they may only be slow: start again, "
                    "or with fewer ranks") from None
            holder = self.turns.holder() if self.turns is not None else None
            raise WorldBusy(
                f"the MPI ranks did not answer within {limit} s ({exc}): they are busy with "
                f"{'work of ' + str(holder.get('notebook')) if holder else 'work sent by a client outside the workbench'}"
                " or blocked in MPI. Try again when it has finished, raise the timeout "
                "(Workbench.attach(..., timeout=600)), or restart the world: "
                "Workbench(profile=..., activate=False) then wb.restart(force=True)") from None
        levels = {info["thread_level"] for info in infos.values()}
        level = levels.pop() if len(levels) == 1 else thread_level
        found_mpi = next(iter(infos.values())).get("mpi", mpi)
        known = {"ranks": {e: info["rank"] for e, info in infos.items()}, "thread_level": level,
                 "hosts": {info["rank"]: info.get("host", "") for info in infos.values()}, "mpi": found_mpi,
                 "generation": None}
        if self.turns is not None:
            uuids = upstream.engine_identities(self.client)
            known["generation"] = self.turns.record_engine_set(
                known["ranks"], restarted=restarted,
                engines={str(e): [r, uuids.get(e, "")] for e, r in known["ranks"].items()},
                thread_level=level, hosts={str(r): h for r, h in known["hosts"].items()},
                mpi=mpi if self.owns_cluster else found_mpi)["generation"]
        return known


#: The sessions of this process that connected to a cluster (each added when it takes an engine
#: set: started, attached or restarted; gone once collected): what the lab's world sidebar acts
#: on in a notebook's kernel (:mod:`mpiworkbench.sidebar.actions`).
LIVE_SESSIONS: weakref.WeakSet = weakref.WeakSet()


def sessions_of(cluster_id: str, profile_dir: str | os.PathLike | None = None) -> list[Any]:
    """The live sessions of this process connected to the cluster *cluster_id* (of the profile
    directory *profile_dir*, when given), oldest first.

    Raises
    ------
    LookupError
        None is: naming the cluster and the sessions this process has.
    """
    wanted = None if profile_dir is None else os.path.realpath(profile_dir)
    live = sorted((s for s in list(LIVE_SESSIONS) if s._connection is not None), key=id)
    found = [s for s in live if s.cluster_id == cluster_id
             and (wanted is None or os.path.realpath(s.cluster.profile_dir) == wanted)]
    if not found:
        others = ", ".join(repr(s.cluster_id) for s in live) or "none"
        raise LookupError(
            f"no workbench session of this process (pid {os.getpid()}) is connected to the MPI world "
            f"{cluster_id!r}{'' if profile_dir is None else f' of {profile_dir}'} (its connected sessions: {others}); "
            "act on the world from a notebook that uses it (wb.restart(), wb.stop()), or attach one: "
            f"Workbench.attach(profile=..., cluster_id={cluster_id!r})")
    return found


class FromConnection:
    """A read-only attribute of a session read from its :class:`Connection` (*name*), *default*
    while the session is not connected."""

    def __init__(self, name: str, default: Any, doc: str) -> None:
        self.name, self.default, self.__doc__ = name, default, doc

    def __get__(self, session: Any, owner: type | None = None) -> Any:
        if session is None:
            return self
        connection = session._connection
        if connection is None:
            return type(self.default)() if isinstance(self.default, dict) else self.default
        return getattr(connection, self.name)

    def __set__(self, session: Any, value: Any) -> None:
        raise AttributeError(f"{self.name} is the connection's: it changes when the session connects")


class Handed:
    """A method of the session that is a method of what it holds (its executor, its debugging):
    ``wb.run`` is ``wb.calls.run``; read on the class, the method itself (its signature and
    docstring, for ``help`` and the API reference). The holder is made once, with the session:
    the first read keeps the bound method in the session's own attributes, which later reads
    find first (this descriptor defines no ``__set__``), so a call costs no lookup through it."""

    def __init__(self, holder: str, cls: type) -> None:
        self.holder, self.cls = holder, cls

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, session: Any, owner: type | None = None) -> Any:
        if session is None:
            return getattr(self.cls, self.name)
        bound = getattr(getattr(session, self.holder), self.name)
        setattr(session, self.name, bound)  # (an attribute of the session's own: no __set__ here)
        return bound
