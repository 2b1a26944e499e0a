"""The notebook's handle on an MPI cluster: ipyparallel engines that are one MPI world.

Its life cycle only — start or attach, restart, detach or stop, the rank map, the world's
state; running code is :mod:`~mpiworkbench.client.execution`, finding, building, stopping
and restarting clusters :mod:`~mpiworkbench.client.clusters`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from typing import Any, Iterator

from mpiworkbench.core import implementations, machine
from mpiworkbench.client import clusters, leftovers, owners
from mpiworkbench.client.errors import WorldBusy, WorldInUse
from mpiworkbench.client.execution import Execution
from mpiworkbench.client.watchdog import start_watchdog, stop_watchdog
from mpiworkbench.client.world import RESTARTING, ClientInfo, World, turn, world_directory

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
#: Seconds a session waits for its client to see the engines another client restarted.
RESTART_FOLLOW_S = 10.0
#: Seconds a restart waits for the clients whose work it ended to let the world go.
RESTART_TURN_S = 60.0


class Session(Execution):
    """An ipyparallel cluster whose engines are the ranks of one MPI world: its life cycle and
    how code runs on it. The user-facing :class:`mpiworkbench.Workbench` adds the panels.

    Parameters
    ----------
    n : int
        Number of MPI ranks (engines).
    timeout : float or None
        Seconds a ``%%px`` cell or :meth:`run` may take before its ranks are reported
        as hung (``None`` waits forever). Change it any time: ``wb.timeout = 600``.
    oversubscribe : bool
        Allow more ranks than cores. MPICH ranks busy-poll while they wait, so
        oversubscribed ranks steal each other's cores and timings stop meaning much.
    cluster_id : str, optional
        ipyparallel cluster id; a fresh one by default, so two notebooks never share engines.
    controller_ip : str
        Interface the controller listens on: loopback unless you ask otherwise.
    activate : bool
        Register ``%px``/``%%px`` (with the timeout) on this cluster when started in IPython.
    failure_grace : float
        Once a rank has failed, seconds the others may take to follow before they are
        reported as blocked (a failed collective).
    log_level : int
        Log level of ipyparallel's cluster (``logging.WARNING`` by default).
    thread_level : {"single", "funneled", "serialized", "multiple"}, optional
        MPI thread level the engines initialise with (``MPI4PY_RC_THREAD_LEVEL``). mpi4py's
        default, ``multiple``, costs about 1.5 µs per small collective on this kind of
        machine; benchmarks compare fairly against C at ``single``. On an attached
        cluster it is read from the engines.
    profile : str, optional
        An IPython cluster profile (e.g. ``"mpi"``): :meth:`start` attaches to the cluster
        of that profile (and ``cluster_id``, ``""`` unless given) when one is running —
        started with ``ipcluster``, JupyterLab's *IPython Parallel* sidebar or as a Slurm
        job — and starts a cluster of its own otherwise. See also :meth:`attach`.
    mpi : str, optional
        The MPI implementation of the cluster's ranks: ``"mpich"`` (the venv's own),
        ``"openmpi"`` or ``"impi"`` (:mod:`mpiworkbench.core.implementations`; default:
        ``$MPIWORKBENCH_MPI``, else ``mpich``). On an attached cluster it is read from the engines.

    Examples
    --------
    >>> with Session(n=2) as wb:                      # doctest: +SKIP
    ...     print(wb.run(lambda: __import__("mpi4py.MPI").MPI.COMM_WORLD.rank))
    [0, 1]
    """

    def __init__(
        self,
        n: int = 2,
        *,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        oversubscribe: bool = False,
        cluster_id: str | None = None,
        controller_ip: str = "127.0.0.1",
        activate: bool = True,
        failure_grace: float = 2.0,
        log_level: int = logging.WARNING,
        thread_level: str | None = None,
        profile: str | None = None,
        mpi: str | None = None,
    ):
        clusters.check_start_options(n, thread_level, oversubscribe)
        #: The MPI implementation of the ranks (a name of :mod:`mpiworkbench.core.implementations`).
        self.mpi = (implementations.get(mpi) if mpi else implementations.current()).name
        self.thread_level = thread_level
        self.n = n
        self.timeout = timeout
        self.oversubscribe = n > machine.cores()
        self.profile = profile
        #: Which cluster to look for under *profile* ("" is ipcluster's and the sidebar's default).
        self._attach_id = cluster_id or ""
        self.cluster_id = cluster_id or f"mpiwb-{uuid.uuid4().hex[:8]}"
        #: Whether this session started its cluster (and so stops it): False when attached.
        self.owns_cluster = True
        self.controller_ip = controller_ip
        self.activate = activate
        self.failure_grace = failure_grace
        self.log_level = log_level
        self.cluster = None
        self.client = None
        self.view = None
        self.ranks: dict[int, int] = {}
        #: Rank → the host it runs on (from the rank map).
        self.hosts: dict[int, str] = {}
        self._magics = None
        self._watchdog = None
        #: This session's place in the cluster's shared MPI world (:mod:`~mpiworkbench.client.world`).
        self._world: World | None = None
        #: The generation of the engine set this session last connected to.
        self._generation = None
        #: What this session's calls are part of, for the clients waiting for them
        #: (``wb.doing("speedup sweep")``); the called function's name otherwise.
        self.activity = ""

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> str:
        """What the MPI world is doing now, as seen by every client of it:

        ``"stopped"`` / ``"starting"``
            this session has no cluster yet;
        ``"running"``
            the ranks are free;
        ``"busy"``
            the ranks run someone's work (another notebook's, or this one's in the background):
            a call now waits its turn;
        ``"blocked"``
            that work outlived its timeout and still runs (most likely stuck in MPI): calls are
            refused until someone restarts the world (``wb.clients()`` says who holds it);
        ``"dead"``
            the MPI world has died (a rank killed, ``MPI_Abort``, a segfault):
            ``wb.restart()`` gives a fresh one.
        """
        if self.cluster is None:
            return "stopped"
        if self.view is None:
            return "starting"
        if self._world_died():
            return "dead"
        holder = self._world.holder() if self._world is not None else None
        if holder is not None:
            return "blocked" if holder.get("blocked") else "busy"
        return "running"

    def clients(self) -> list[dict[str, Any]]:
        """Every client attached to this cluster's MPI world, oldest first: ``notebook``,
        ``kernel``, ``pid``, ``host``, ``since`` (epoch seconds), ``state`` (``running``,
        ``blocked``, ``waiting`` or ``idle``), ``label`` (what it runs or waits to run) and
        ``me`` (this session). What the control panel lists."""
        return [] if self._world is None else self._world.clients()

    @contextlib.contextmanager
    def doing(self, activity: str) -> Iterator[None]:
        """Name what the calls inside the block are part of (``"speedup sweep"``): the other
        notebooks waiting for the world see it."""
        before, self.activity = self.activity, activity
        try:
            yield
        finally:
            self.activity = before

    def _world_died(self) -> bool:
        return clusters.world_died(self.cluster, self.client, self.n)

    def how_it_ended(self) -> str:
        """Why the MPI world died, in a sentence (``""`` while it lives): its ``mpiexec``'s time
        limit, a rank killed, aborted or crashed, ranks lost while ``mpiexec`` runs (a node cut
        off), the controller gone."""
        if self.cluster is None or self.client is None or not self._world_died():
            return ""
        return clusters.how_it_ended(self.cluster, self.client, self.ranks, self.hosts)

    def world_log(self) -> str:
        """What the world's ``mpiexec`` and controller wrote (the ranks' last words when it
        died): the log a death message does not dump into the notebook."""
        return "" if self.cluster is None else clusters.world_log(self.cluster)

    @classmethod
    def attach(cls, profile: str = "mpi", cluster_id: str = "", **options: Any) -> "Session":
        """A session on the running cluster of *profile*, started by someone else.

        The cluster may have been started by ``ipcluster start --profile=mpi``, JupyterLab's
        *IPython Parallel* sidebar or a Slurm job; the rank map, ``%px``, the panels and
        :meth:`restart` work as on a cluster the session started. :meth:`stop` detaches
        and leaves the cluster running; ``stop(cluster=True)`` stops it.

        Parameters
        ----------
        profile : str
            The IPython profile the cluster was started with.
        cluster_id : str
            Its cluster id (``""``: what ``ipcluster`` and the sidebar use by default).
        **options
            Other :class:`Session` options (``timeout``, ``activate``, …).

        Raises
        ------
        RuntimeError
            When no cluster of that profile and id is running, saying how to start one.
        """
        return cls(1, profile=profile, cluster_id=cluster_id, **options).attach_to(profile, cluster_id)

    def attach_to(self, profile: str, cluster_id: str = "") -> "Session":
        """Attach this (stopped) session to the running cluster of *profile*; see :meth:`attach`."""
        if self.cluster is not None:
            raise RuntimeError(f"this session already runs a cluster ({self.origin}); wb.stop() it first")
        found = clusters.running_cluster(profile, cluster_id, required=True)
        self.profile, self._attach_id = profile, cluster_id
        return self._attach(found)

    def _attach(self, cluster, restarted: bool = False) -> "Session":
        self.cluster, self.owns_cluster = cluster, False
        self.cluster_id = cluster.cluster_id
        try:
            self.client = cluster.connect_client_sync()
            # the launchers' count; the registered engines when the file lost track of them
            self.n = clusters.engine_count(cluster) or max(1, len(self.client.ids))
            self.oversubscribe = self.n > machine.cores()
            self._world = self._open_world()
            self._connect_engines(restarted=restarted)
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def origin(self) -> str:
        """Where this session's cluster came from, in a sentence (notebooks print it)."""
        if self.cluster is None:
            return "not running"
        if self.owns_cluster:
            return f"started a cluster of its own: {self.n} MPI rank(s), launcher {self.launcher}"
        return (f"attached to the running {self.profile!r} cluster: {self.n} MPI rank(s), launcher "
                f"{self.launcher} (wb.stop() detaches and leaves it running)")

    @property
    def launcher(self) -> str:
        """Which ipyparallel launcher started the engines (``"mpi"``, ``"slurm"``, …)."""
        return "none" if self.cluster is None else clusters.launcher_name(self.cluster)

    def start(self, n: int | None = None, thread_level: str | None = None, own: bool = False,
              mpi: str | None = None) -> "Session":
        """Start the controller and ``mpiexec -n N ipengine --mpi``; return when all are ready.

        With a *profile*, attach to that profile's running cluster instead, when there is one.
        Does nothing when the session already runs a cluster.

        Parameters
        ----------
        n : int, optional
            A new rank count for the session's own cluster (the control panel's Start).
        thread_level : str, optional
            A new MPI thread level for the session's own cluster.
        own : bool
            Start a cluster of the session's own even when the profile's cluster runs.
        mpi : str, optional
            A new MPI implementation for the session's own cluster (the control panel's MPI).

        Returns
        -------
        Session
            This session, running (so ``wb = Workbench(n=2).start()`` reads well).
        """
        if self.cluster is not None:
            return self
        if mpi is not None:
            self.mpi = implementations.get(mpi).name
        if n is not None or thread_level is not None:
            n = self.n if n is None else n
            clusters.check_start_options(n, thread_level, oversubscribe=True)
            self.n, self.thread_level = n, thread_level
            self.oversubscribe = n > machine.cores()
        if self.profile is not None and not own:
            found = clusters.running_cluster(self.profile, self._attach_id)
            if found is not None:
                return self._attach(found)
        self.owns_cluster = True
        self.cluster = clusters.new_cluster(self.n, self.cluster_id, self.controller_ip,
                                            self.thread_level, self.log_level, mpi=self.mpi)
        try:
            # armed first: a kernel killed at any moment of the start leaves nothing running
            self._watchdog = start_watchdog(self.cluster.profile_dir, self.cluster.cluster_id)
            self.cluster.start_cluster_sync()
            self.client = self.cluster.connect_client_sync()
            self._world = self._open_world()
            self._connect_engines(fresh=True)
        except BaseException:
            self.stop()
            raise
        return self

    def _open_world(self) -> World:
        directory = world_directory(self.cluster.profile_dir, self.cluster.cluster_id)
        return World(directory, ClientInfo.here(self.client.session.session),
                     refuse_own_blocked=os.environ.get(REFUSE_AFTER_HANG_VARIABLE) == "1")

    def _connect_engines(self, fresh: bool = False, restarted: bool = False) -> None:
        """The rank map and the view in rank order. Read from the world's record when it
        describes these very engines (an attach never waits for busy ranks); asked of the
        engines otherwise, bounded by :attr:`timeout` on a cluster started elsewhere."""
        known = None if fresh or restarted else self._recorded_engine_set()
        if known is not None:
            self._take_engine_set(*known)
        else:
            self._ask_engines(restarted)
        if self._world is not None:
            self._world.changed_since_seen()
            self._generation = (self._world.engine_set() or {}).get("generation")
        self._build_view()

    def _take_engine_set(self, ranks: dict[int, int], level: str | None, hosts: dict[int, str] | None = None) -> None:
        self.ranks = ranks
        self.hosts = dict(hosts or {})
        if not self.owns_cluster:  # our own cluster keeps the level asked for (None: mpi4py's default)
            self.thread_level = level

    def _recorded_engine_set(self) -> tuple[dict[int, int], str | None, dict[int, str]] | None:
        record = self._world.engine_set() if self._world is not None else None
        if not record:
            return None
        self.client.ids  # noqa: B018 - takes in the controller's news of engines (re)registered
        uuids = clusters.engine_uuids(self.client)
        engines = {int(e): tuple(v) for e, v in (record.get("engines") or {}).items()}
        if len(engines) != self.n or any(uuids.get(e) != u for e, (_rank, u) in engines.items()):
            return None  # another engine set (restarted, or a new cluster of the same id)
        hosts = {int(rank): host for rank, host in (record.get("hosts") or {}).items()}
        if not self.owns_cluster and record.get("mpi"):
            self.mpi = record["mpi"]
        return {e: rank for e, (rank, _u) in engines.items()}, record.get("thread_level"), hosts

    def _ask_engines(self, restarted: bool) -> None:
        limit = self.cluster.engine_timeout if self.owns_cluster or restarted else self.timeout
        try:
            with turn(self._world, "connecting to the ranks", limit):
                infos = clusters.rank_map(self.client, self.n, timeout=limit)
        except TimeoutError as exc:
            if isinstance(exc, WorldBusy):
                raise
            holder = self._world.holder() if self._world is not None else None
            raise WorldBusy(
                f"the MPI ranks did not answer within {limit} s ({exc}): they are busy with "
                f"{'work of ' + str(holder.get('notebook')) if holder else 'work sent by a client outside the workbench'}"
                " or blocked in MPI. Try again when it has finished, raise the timeout "
                "(Workbench.attach(..., timeout=600)), or restart the world: "
                "Workbench(profile=..., activate=False) then wb.restart(force=True)") from None
        levels = {info["thread_level"] for info in infos.values()}
        level = levels.pop() if len(levels) == 1 else self.thread_level
        if not self.owns_cluster:  # our own cluster keeps the implementation asked for
            self.mpi = next(iter(infos.values())).get("mpi", self.mpi)
        self._take_engine_set({e: info["rank"] for e, info in infos.items()}, level,
                              {info["rank"]: info.get("host", "") for info in infos.values()})
        if self._world is not None:
            uuids = clusters.engine_uuids(self.client)
            self._world.record_engine_set(
                self.ranks, restarted=restarted,
                engines={str(e): [r, uuids.get(e, "")] for e, r in self.ranks.items()},
                thread_level=level, hosts={str(r): h for r, h in self.hosts.items()}, mpi=self.mpi)

    def _build_view(self) -> None:
        by_rank = sorted(self.ranks, key=self.ranks.__getitem__)
        self.view = self.client.direct_view(by_rank)
        self.view.block = True
        if self.activate:
            from mpiworkbench.client.magics import activate
            self._magics = activate(self)

    def _follow_restart(self) -> str:
        """When another client restarted the world since our last call: connect to the new
        ranks and say what happened (``""`` when nothing did)."""
        if self._world is None:
            return ""
        record = self._world.changed_since_seen()
        if not record or record.get("generation") == self._generation:
            return ""
        deadline = time.monotonic() + RESTART_FOLLOW_S
        known = self._recorded_engine_set()
        while known is None and time.monotonic() < deadline:  # our client may not have seen them yet
            time.sleep(0.05)
            known = self._recorded_engine_set()
        if known is not None:
            self._take_engine_set(*known)
            self._generation = record.get("generation")
            self._build_view()
            if not self.owns_cluster and self.profile is not None:
                # the cluster file records the new engine set: read it, so that our view of
                # the launchers (whether the world died) follows
                self.cluster = clusters.running_cluster(self.profile, self._attach_id) or self.cluster
            elif self.owns_cluster:
                # our cluster object knows only the engines we started, which are gone
                clusters.drop_ended_engine_sets(self.cluster)
        elif not self.owns_cluster and self.profile is not None:
            # a new controller too (a JupyterLab server restarted its cluster): attach anew
            client, world = self.client, self._world
            self.cluster = self.client = self.view = self._world = None
            world.close()
            with contextlib.suppress(Exception):
                client.close()
            self._attach(clusters.running_cluster(self.profile, self._attach_id, required=True))
        else:
            return ""
        by = record.get("restarted_by") or {}
        when = time.strftime("%H:%M:%S", time.localtime(record.get("at") or time.time()))
        who = f"{by.get('notebook')} (pid {by.get('pid')})" if by else "another client"
        return (f"the MPI world was restarted by {who} at {when}: everything this notebook had on the "
                f"ranks (variables, solvers, remote objects) is gone. This session is connected to the "
                f"new ranks; run your cell again.")

    def stop(self, cluster: bool = False) -> str:
        """Stop every engine and the controller (idempotent).

        Parameters
        ----------
        cluster : bool
            Also stop a cluster this session attached to; by default an attached session
            only detaches and the cluster keeps running for whoever started it.

        Returns
        -------
        str
            What was done, in a sentence.
        """
        owned = self.owns_cluster or cluster
        running, client, world = self.cluster, self.client, self._world
        self.cluster = self.client = self.view = self._world = None
        self.ranks = {}
        if world is not None:
            world.remove() if owned else world.close()
        watchdog, self._watchdog = self._watchdog, None
        try:
            if client is not None:
                client.close()
            if running is None:
                return "not running"
            if not owned:
                return (
                    "detached; the cluster keeps running for whoever started it (stop it with "
                    "wb.stop(cluster=True), `ipcluster stop`, or the IPython Parallel sidebar)"
                )
            with clusters.acting_on(running, attached=not self.owns_cluster):
                clusters.stop_cluster(running, self.log_level, client)
            return "stopped the engines and the controller"
        finally:  # only now: a kernel killed while its cluster stops leaves nothing either
            stop_watchdog(watchdog)

    def restart(self, force: bool = False) -> "Session":
        """A fresh MPI world: kill the engines (even if blocked in MPI) and start new ones.

        The world may be shared: while another notebook's work runs on the ranks (and has not
        outlived its timeout), a restart is refused unless *force*; every other notebook
        attached to the cluster is told on its next call that the world was restarted, and by
        whom, and continues on the new ranks.

        The controller stays up; engine ids change, so :attr:`ranks`, :attr:`view` and
        the ``%px`` magics are rebuilt. On an attached cluster the engines are restarted
        through the cluster's own launcher (its profile's mpiexec, or a new Slurm job):
        a cluster of JupyterLab's *IPython Parallel* sidebar is restarted by its server
        (controller included, so the sidebar's STOP still stops everything); for any other
        owner (``ipcluster``, a script) the new engines are started from this process and
        recorded in the cluster file, which ``ipcluster stop`` reads. ``ipcluster`` itself
        tears its cluster down when its engines stop within 30 s of starting
        (``IPClusterStart.early_shutdown``).

        Parameters
        ----------
        force : bool
            Restart even while another notebook's work runs on the ranks (it fails, and its
            notebook is told why).

        Returns
        -------
        Session
            This session, running again (started if it was stopped).

        Raises
        ------
        WorldInUse
            Another client's work is running on the ranks and *force* is false.
        """
        if self.cluster is None:
            return self.start()
        self._end_running_work(force)
        server = None if self.owns_cluster else owners.owning_server(self.cluster)
        if server is not None:
            return self._restart_through(server)
        self.view = None
        with self._restarting(), clusters.acting_on(self.cluster, attached=not self.owns_cluster):
            clusters.kill_engines(self.cluster, self.client, self.ranks, self.log_level)
            self.cluster.start_engines_sync(self.n)
            self._connect_engines(restarted=True)
            if not self.owns_cluster:
                # the owner rewrites the cluster file when it sees its engines stop, which can
                # drop the set started here: record it again, so `ipcluster stop` stops it too
                self.cluster.update_cluster_file()
        return self

    def _restart_through(self, server: owners.JupyterServer) -> "Session":
        # the JupyterLab server owns this cluster (its sidebar's STOP stops what the server
        # started): ask it for the fresh world, then attach to the cluster it started
        n, client, world = self.n, self.client, self._world
        left = clusters.kill_ranks(self.cluster, client, self.ranks)
        leftovers.after_kill(left)  # the server's restart does not know the ranks' /dev/shm files
        self.cluster = self.client = self.view = self._world = None
        self.ranks = {}
        client.close()
        with contextlib.ExitStack() as holding:
            if world is not None:
                holding.callback(world.close)
                world.acquire(RESTARTING, RESTART_TURN_S, restarting=True)
            owners.restart_through(server, self.profile, self.cluster_id, n)
        return self._attach(clusters.running_cluster(self.profile, self.cluster_id, required=True),
                            restarted=True)

    def _end_running_work(self, force: bool) -> None:
        """Before a restart: refuse it while another client's live work runs (unless *force*);
        otherwise end whatever holds the ranks — blocked work, forced — and wait until its
        client has let the world's turn go (its calls fail as the engines die)."""
        world = self._world
        holder = world.holder() if world is not None else None
        if not holder:
            return
        if holder.get("id") != world.me.id and not holder.get("blocked") and not force:
            since = holder.get("running_since")
            raise WorldInUse(
                f"{holder.get('notebook')} (pid {holder.get('pid')}) is running "
                f"{holder.get('label') or 'work'} on the ranks"
                + (f" (for {time.time() - since:.0f} s)" if since else "")
                + "; a restart would end it. Wait until wb.state reads 'running', or restart anyway "
                "with wb.restart(force=True): that notebook is told why on its next call.")
        # the ranks' footprints are remembered: the restart's kill_engines removes their files
        clusters.kill_ranks(self.cluster, self.client, self.ranks)

    @contextlib.contextmanager
    def _restarting(self) -> Iterator[None]:
        """Hold the world's turn while the engines are replaced: the other clients wait
        ("restarting the MPI world") instead of sending work to dying ranks."""
        world = self._world
        if world is None:
            yield
            return
        world.acquire(RESTARTING, RESTART_TURN_S, restarting=True)
        try:
            yield
        finally:
            world.release()

    def __enter__(self) -> "Session":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n} mpi={self.mpi} cluster_id={self.cluster_id!r} state={self.state}>"
