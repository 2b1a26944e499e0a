"""The notebook's handle on an MPI cluster: ipyparallel engines that are one MPI world.

Its life cycle only — start or attach, restart, detach or stop, the rank map, the world's
state. It holds an executor, which runs code on the ranks (:mod:`~mpiworkbench.client.calls.execution`),
and the ranks' debugging (:mod:`~mpiworkbench.client.calls.debugging`), and hands their methods
on (``wb.run`` is ``Executor.run``); starting, finding, stopping and restarting clusters is the
cluster's room (:mod:`~mpiworkbench.client.cluster`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from typing import Any, Iterator, Self

from mpiworkbench.client.cluster import allocation, attach, engines, health, time_limit
from mpiworkbench.client.cluster.start import CONNECT_TIMEOUT_S, check_start_options, new_cluster
from mpiworkbench.client.calls import restarts
from mpiworkbench.client.calls.connection import LIVE_SESSIONS, Connection, FromConnection, Handed
from mpiworkbench.client.calls.debugging import RankDebugging, remove_connection_files
from mpiworkbench.client.calls.execution import DEFAULT_TIMEOUT_S, REFUSE_AFTER_HANG_VARIABLE, Executor
from mpiworkbench.client.calls.magics import activate
from mpiworkbench.client.cluster.watchdog import start_watchdog
from mpiworkbench.core import implementations, machine


class Session:
    """An ipyparallel cluster whose engines are the ranks of one MPI world: its life cycle and
    how code runs on it. The user-facing :class:`mpiworkbench.Workbench` adds the panels.

    Parameters
    ----------
    n : int, optional
        Number of MPI ranks (engines): by default 2, or inside a Slurm job the job's task count
        (the ranks then run on the job's nodes: :mod:`~mpiworkbench.client.cluster.allocation`).
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
        default, ``multiple``, makes small collectives slower than ``single``;
        benchmarks compare fairly against C at ``single``. On an attached cluster it is
        read from the engines.
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

    #: The last ``%%px`` cell's output on every rank, grouped (:class:`~mpiworkbench.client.calls.output.GroupedOutput`:
    #: ``print(wb.last_output)``, ``wb.last_output.show_all()``, ``wb.last_output.raw()``).
    last_output = None

    def __init__(
        self,
        n: int | None = None,
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
        n = allocation.world_size(n)  # 2, or the Slurm job's tasks inside one
        check_start_options(n, thread_level, oversubscribe)
        #: The MPI implementation of the ranks (a name of :mod:`mpiworkbench.core.implementations`).
        self.mpi = (implementations.get(mpi) if mpi else implementations.current()).name
        self.n, self.thread_level, self.timeout, self.profile = n, thread_level, timeout, profile
        #: Which cluster to look for under *profile* ("" is ipcluster's and the sidebar's default).
        self._attach_id = cluster_id or ""
        self.cluster_id = cluster_id or f"mpiwb-{uuid.uuid4().hex[:8]}"
        self.controller_ip, self.activate, self.failure_grace, self.log_level = controller_ip, activate, failure_grace, log_level
        self._magics = None
        #: The cluster and all this session knows of it, while it is connected (None otherwise).
        self._connection: Connection | None = None
        #: What this session's calls are part of, for the clients waiting for them
        #: (``wb.doing("speedup sweep")``); the called function's name otherwise.
        self.activity = ""
        #: What runs code on the ranks (:class:`~mpiworkbench.client.calls.execution.Executor`).
        self.calls = Executor(self)
        #: The ranks' debugging (:class:`~mpiworkbench.client.calls.debugging.RankDebugging`).
        self.debugging = RankDebugging(self)

    # ------------------------------------------------------------------ what it holds, handed on
    # (each name is its holder's method of that name: wb.run is wb.calls.run)
    run, run_async, gather, submit, wait_explained = (Handed("calls", Executor) for _ in range(5))
    execute, interrupt, pull, push, scatter, collect = (Handed("calls", Executor) for _ in range(6))
    post_mortem, engine_of, create, info, environment = (Handed("calls", Executor) for _ in range(5))
    connection_file, debug, stops, where = (Handed("debugging", RankDebugging) for _ in range(4))

    # ------------------------------------------------------------------ the connection
    cluster = FromConnection("cluster", None, "The ipyparallel ``Cluster`` (None while not connected).")
    client = FromConnection("client", None, "The ipyparallel ``Client`` connected to the controller (None while not connected).")
    view = FromConnection("view", None, "A ``DirectView`` of every engine in rank order (None while not connected or starting).")
    ranks = FromConnection("ranks", {}, "Engine id → MPI rank (empty while not connected).")
    hosts = FromConnection("hosts", {}, "MPI rank → the host it runs on, from the rank map (empty while not connected).")
    owns_cluster = FromConnection("owns_cluster", True, "Whether this session started its cluster (and so stops it): "
                                  "False when attached. A session not connected starts a cluster of its own unless it "
                                  "finds its profile's.")
    _turns = FromConnection("turns", None, "The session's place among the world's clients (None while not connected).")
    _rank_processes = FromConnection("rank_processes", {}, "Rank → its process, as the ranks were armed.")

    @property
    def oversubscribed(self) -> bool:
        """Whether the world has more ranks than this machine has cores (timings then mean little)."""
        return self.n > machine.cores()

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
        ``"debugging"``
            that work has a rank stopped in a debugger (:meth:`debug`): the ranks wait for it,
            and no timeout counts the time; :meth:`where` says where each rank is;
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
        holder = self._turns.holder() if self._turns is not None else None
        if holder is not None:
            if holder.get("blocked"):
                return "blocked"
            return "debugging" if self.stops() else "busy"
        return "running"

    def clients(self) -> list[dict[str, Any]]:
        """Every client attached to this cluster's MPI world, oldest first: ``notebook``,
        ``kernel``, ``pid``, ``host``, ``since`` (epoch seconds), ``state`` (``running``,
        ``blocked``, ``waiting`` or ``idle``), ``label`` (what it runs or waits to run) and
        ``me`` (this session). What the control panel lists."""
        return [] if self._turns is None else self._turns.clients()

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
        return health.world_died(self.cluster, self.client, self.n)

    def how_it_ended(self) -> str:
        """Why the MPI world died, in a sentence (``""`` while it lives): its ``mpiexec``'s time
        limit, a rank killed, aborted or crashed, ranks lost while ``mpiexec`` runs (a node cut
        off), the controller gone."""
        if self.cluster is None or self.client is None or not self._world_died():
            return ""
        return health.how_it_ended(self.cluster, self.client, self.ranks, self.hosts)

    def world_log(self) -> str:
        """What the world's ``mpiexec`` and controller wrote (the ranks' last words when it
        died): the log a death message does not dump into the notebook."""
        return "" if self.cluster is None else health.world_log(self.cluster)

    @classmethod
    def attach(cls, profile: str = "mpi", cluster_id: str = "", **options: Any) -> Self:
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

    def attach_to(self, profile: str, cluster_id: str = "") -> Self:
        """Attach this (stopped) session to the running cluster of *profile*; see :meth:`attach`."""
        if self.cluster is not None:
            raise RuntimeError(f"this session already runs a cluster ({self.origin}); wb.stop() it first")
        found = attach.running_cluster(profile, cluster_id, required=True)
        self.profile, self._attach_id = profile, cluster_id
        return self._attach(found)

    def _attach(self, cluster, restarted: bool = False) -> Self:
        connection = self._connection = Connection(cluster, owns_cluster=False)
        self.cluster_id = cluster.cluster_id
        try:
            connection.client = cluster.connect_client_sync(timeout=CONNECT_TIMEOUT_S)
            # the launchers' count; the registered engines when the file lost track of them
            self.n = engines.engine_count(cluster) or max(1, len(connection.client.ids))
            connection.open_turns(refuse_own_blocked=os.environ.get(REFUSE_AFTER_HANG_VARIABLE) == "1")
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
        return "none" if self.cluster is None else engines.launcher_name(self.cluster)

    def start(self, n: int | None = None, thread_level: str | None = None, own: bool = False,
              mpi: str | None = None) -> Self:
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
            check_start_options(n, thread_level, oversubscribe=True)
            self.n, self.thread_level = n, thread_level
        if self.profile is not None and not own:
            found = attach.running_cluster(self.profile, self._attach_id)
            if found is not None:
                return self._attach(found)
        cluster = new_cluster(self.n, self.cluster_id, self.controller_ip, self.thread_level, self.log_level, mpi=self.mpi)
        connection = self._connection = Connection(cluster, owns_cluster=True)
        try:
            # armed first: a kernel killed at any moment of the start leaves nothing running
            connection.watchdog = start_watchdog(cluster.profile_dir, cluster.cluster_id)
            cluster.start_cluster_sync()
            connection.client = cluster.connect_client_sync(timeout=CONNECT_TIMEOUT_S)
            connection.open_turns(refuse_own_blocked=os.environ.get(REFUSE_AFTER_HANG_VARIABLE) == "1")
            self._connect_engines(fresh=True)
        except BaseException:
            self.stop()
            raise
        time_limit.watch(self, allocation.current())  # inside a Slurm job: stopped before its time limit
        return self

    def _connect_engines(self, fresh: bool = False, restarted: bool = False) -> None:
        """The rank map and the view in rank order (:meth:`Connection.connect_engines`), taken."""
        self._take_engine_set(self._connection.connect_engines(self.n, self.timeout, fresh, restarted, self.thread_level, self.mpi))

    def _take_engine_set(self, known: dict[str, Any]) -> None:
        """Take an engine set (:meth:`Connection.take_engine_set`: the rank map and the view); an
        attached session also takes the engines' thread level and MPI (our own cluster keeps what
        was asked for); ``%px`` goes to the new view."""
        self._connection.take_engine_set(known)
        LIVE_SESSIONS.add(self)  # what the lab's world sidebar finds (connection.sessions_of)
        if not self.owns_cluster:
            self.thread_level = known["thread_level"]
            self.mpi = known.get("mpi") or self.mpi
        if self.activate:
            self._magics = activate(self)

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
        connection, self._connection = self._connection, None
        time_limit.unwatch(self)
        if connection is None:
            return "not running"
        remove_connection_files(connection)
        return connection.close(stop_cluster=connection.owns_cluster or cluster, log_level=self.log_level)

    def restart(self, force: bool = False) -> Self:
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
        recorded in the cluster file, which ``ipcluster stop`` reads (mind ``ipcluster``'s
        first 30 s: docs/limits.md).

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
        return restarts.restart(self, force)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n} mpi={self.mpi} cluster_id={self.cluster_id!r} state={self.state}>"
