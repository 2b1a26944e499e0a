"""The notebook's handle on an MPI cluster: ipyparallel engines that are one MPI world.

Its life cycle only — start or attach, restart, detach or stop, the rank map, the world's
state; running code is :mod:`~mpiworkbench.client.execution`, finding, building, stopping
and restarting clusters :mod:`~mpiworkbench.client.clusters`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from mpiworkbench.core import machine
from mpiworkbench.client import clusters, owners
from mpiworkbench.client.execution import Execution
from mpiworkbench.client.watchdog import start_watchdog, stop_watchdog

#: Seconds an execution may take before the workbench reports it as hung.
DEFAULT_TIMEOUT_S = 120.0


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
    ):
        clusters.check_start_options(n, thread_level, oversubscribe)
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
        self._magics = None
        self._watchdog = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> str:
        """``"stopped"``, ``"starting"``, ``"running"``, or ``"dead"`` when the MPI world has died
        (a rank killed, ``MPI_Abort``, a segfault: ``wb.restart()`` gives a fresh one)."""
        if self.cluster is None:
            return "stopped"
        if self.view is None:
            return "starting"
        return "dead" if self._world_died() else "running"

    def _world_died(self) -> bool:
        return clusters.world_died(self.cluster, self.client, self.n)

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

    def _attach(self, cluster) -> "Session":
        self.cluster, self.owns_cluster = cluster, False
        self.cluster_id = cluster.cluster_id
        try:
            self.client = cluster.connect_client_sync()
            # the launchers' count; the registered engines when the file lost track of them
            self.n = clusters.engine_count(cluster) or max(1, len(self.client.ids))
            self.oversubscribe = self.n > machine.cores()
            self._connect_engines()
            self.thread_level = self.run(machine.rank_info)[0]["thread_level"]
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

    def start(self, n: int | None = None, thread_level: str | None = None, own: bool = False) -> "Session":
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

        Returns
        -------
        Session
            This session, running (so ``wb = Workbench(n=2).start()`` reads well).
        """
        if self.cluster is not None:
            return self
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
                                            self.thread_level, self.log_level)
        try:
            self.cluster.start_cluster_sync()
            self._watchdog = start_watchdog(self.cluster.cluster_file)
            self.client = self.cluster.connect_client_sync()
            self._connect_engines()
        except BaseException:
            self.stop()
            raise
        return self

    def _connect_engines(self) -> None:
        self.ranks = clusters.rank_map(self.client, self.n, timeout=self.cluster.engine_timeout)
        by_rank = sorted(self.ranks, key=self.ranks.__getitem__)
        self.view = self.client.direct_view(by_rank)
        self.view.block = True
        if self.activate:
            from mpiworkbench.client.magics import activate
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
        owned = self.owns_cluster or cluster
        running, client = self.cluster, self.client
        self.cluster = self.client = self.view = None
        self.ranks = {}
        stop_watchdog(self._watchdog)
        self._watchdog = None
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
            clusters.stop_cluster(running, self.log_level)
        return "stopped the engines and the controller"

    def restart(self) -> "Session":
        """A fresh MPI world: kill the engines (even if blocked in MPI) and start new ones.

        The controller stays up; engine ids change, so :attr:`ranks`, :attr:`view` and
        the ``%px`` magics are rebuilt. On an attached cluster the engines are restarted
        through the cluster's own launcher (its profile's mpiexec, or a new Slurm job):
        a cluster of JupyterLab's *IPython Parallel* sidebar is restarted by its server
        (controller included, so the sidebar's STOP still stops everything); for any other
        owner (``ipcluster``, a script) the new engines are started from this process and
        recorded in the cluster file, which ``ipcluster stop`` reads. ``ipcluster`` itself
        tears its cluster down when its engines stop within 30 s of starting
        (``IPClusterStart.early_shutdown``).

        Returns
        -------
        Session
            This session, running again (started if it was stopped).
        """
        if self.cluster is None:
            return self.start()
        server = None if self.owns_cluster else owners.owning_server(self.cluster)
        if server is not None:
            return self._restart_through(server)
        self.view = None
        with clusters.acting_on(self.cluster, attached=not self.owns_cluster):
            clusters.kill_engines(self.cluster, self.client, self.ranks, self.log_level)
            self.cluster.start_engines_sync(self.n)
            self._connect_engines()
            if not self.owns_cluster:
                # the owner rewrites the cluster file when it sees its engines stop, which can
                # drop the set started here: record it again, so `ipcluster stop` stops it too
                self.cluster.update_cluster_file()
        return self

    def _restart_through(self, server: owners.JupyterServer) -> "Session":
        # the JupyterLab server owns this cluster (its sidebar's STOP stops what the server
        # started): ask it for the fresh world, then attach to the cluster it started
        n, client = self.n, self.client
        clusters.kill_through_nannies(client, self.ranks)
        self.cluster = self.client = self.view = None
        self.ranks = {}
        client.close()
        owners.restart_through(server, self.profile, self.cluster_id, n)
        return self._attach(clusters.running_cluster(self.profile, self.cluster_id, required=True))

    def __enter__(self) -> "Session":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n} cluster_id={self.cluster_id!r} state={self.state}>"
