"""The notebook's handle on an MPI cluster: ipyparallel engines that are one MPI world."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
import uuid
from typing import Any, Callable

from mpiworkbench.core import machine, objects
from mpiworkbench.core.launch import rank_environment
from mpiworkbench.client.remote import RemoteObject
from mpiworkbench.client.waiting import wait_ranks
#: Seconds an execution may take before the workbench reports it as hung.
DEFAULT_TIMEOUT_S = 120.0

#: Hub heartbeat period (ms). ipyparallel's 3000 ms default is what makes a cluster take
#: ~7 s to come up: the hub only counts an engine as registered after a heartbeat round.
HEARTBEAT_MS = 250
#: Missed heartbeats tolerated before the hub drops an engine (120 × 250 ms = 30 s), so
#: oversubscribed, busy-polling ranks are never mistaken for dead ones.
HEARTBEAT_MISSES = 120


def engine_environment() -> dict[str, Any]:
    """On an engine: the machine snapshot of the world and which backends run there."""
    from mpiworkbench import backends

    env = machine.capture(None, measure_load=False)
    env["backends"] = backends.availability()
    return env


def _mpi_rank() -> int:
    from mpi4py import MPI

    return MPI.COMM_WORLD.rank


def _wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


class Session:
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
    thread_level : {"single", "funneled", "serialized", "multiple"}, optional
        MPI thread level the engines initialise with (``MPI4PY_RC_THREAD_LEVEL``). mpi4py's
        default, ``multiple``, costs about 1.5 µs per small collective on this kind of
        machine; benchmarks compare fairly against C at ``single``.

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
    ):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive number of MPI ranks; got {n!r}")
        cores = machine.cores()
        if n > cores and not oversubscribe:
            raise ValueError(
                f"n={n} ranks exceeds the {cores} cores of this machine. MPICH ranks busy-poll "
                "while they wait, so oversubscribed ranks take turns on the cores: it works, "
                "but timings and speedups stop being meaningful. Pass oversubscribe=True to "
                f"start {n} ranks anyway, or use n <= {cores}."
            )
        if thread_level not in (None, *machine.THREAD_LEVELS):
            raise ValueError(
                f"thread_level must be one of {', '.join(machine.THREAD_LEVELS)} (or None for mpi4py's "
                f"default); got {thread_level!r}"
            )
        self.thread_level = thread_level
        self.n = n
        self.timeout = timeout
        self.oversubscribe = n > cores
        self.cluster_id = cluster_id or f"mpiwb-{uuid.uuid4().hex[:8]}"
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
        if self.cluster is None:
            return "stopped"
        return "running" if self.view is not None else "starting"

    def start(self) -> "Session":
        """Start the controller and ``mpiexec -n N ipengine --mpi``; return when all are ready."""
        if self.cluster is not None:
            return self
        import ipyparallel as ipp
        from traitlets.config import Config

        from mpiworkbench.core.launch import find_mpiexec
        config = Config()
        # The mpiexec that belongs to this Python's mpi4py (the venv's, from the mpich wheel),
        # even when the venv's bin/ is not on PATH (a kernel started by a system Jupyter).
        config.MPILauncher.mpi_cmd = [find_mpiexec()]
        environment = rank_environment()
        if self.thread_level is not None:
            environment["MPI4PY_RC_THREAD_LEVEL"] = self.thread_level
        config.MPIEngineSetLauncher.environment = environment
        self.cluster = ipp.Cluster(
            config=config,
            engines="mpi",
            n=self.n,
            cluster_id=self.cluster_id,
            controller_ip=self.controller_ip,
            controller_args=[
                f"--HeartMonitor.period={HEARTBEAT_MS}",
                f"--HeartMonitor.max_heartmonitor_misses={HEARTBEAT_MISSES}",
            ],
            delay=0,
            log_level=self.log_level,
            shutdown_atexit=True,
        )
        try:
            self.cluster.start_cluster_sync()
            self._start_watchdog()
            self.client = self.cluster.connect_client_sync()
            self._connect_engines()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_watchdog(self) -> None:
        # stops the cluster if this process dies without running atexit (a killed kernel)
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "mpiworkbench.client.watchdog", str(os.getpid()), self.cluster.cluster_file],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _stop_watchdog(self) -> None:
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog.poll() is None:
            watchdog.terminate()
            watchdog.wait(timeout=10)

    def _connect_engines(self) -> None:
        self.client.wait_for_engines(self.n, timeout=self.cluster.engine_timeout)
        everyone = self.client[:]
        self.ranks = everyone.apply_async(_mpi_rank).get_dict()
        by_rank = sorted(self.ranks, key=self.ranks.__getitem__)
        self.view = self.client.direct_view(by_rank)
        self.view.block = True
        if self.activate:
            from mpiworkbench.client.magics import activate
            self._magics = activate(self)

    def stop(self) -> None:
        """Stop every engine and the controller (idempotent)."""
        cluster, client = self.cluster, self.client
        self.cluster = self.client = self.view = None
        self.ranks = {}
        self._stop_watchdog()
        if client is not None:
            client.close()
        if cluster is not None:
            # mpiexec ends with a non-zero code when its engines are terminated, which
            # ipyparallel logs as a warning with the engines' whole log: expected, so quiet.
            cluster.log.setLevel(max(self.log_level, logging.ERROR))
            # Engines first, then the controller: stopped together (ipyparallel's
            # stop_cluster), engines lose the hub mid-shutdown and take ~3 s longer to exit.
            cluster.stop_engines_sync()
            cluster.stop_controller_sync()

    def restart(self) -> "Session":
        """A fresh MPI world: stop the engines (even if blocked in MPI) and start new ones.

        The controller stays up; engine ids change, so :attr:`ranks`, :attr:`view` and
        the ``%px`` magics are rebuilt.
        """
        if self.cluster is None:
            return self.start()
        self.view = None
        # A rank blocked in an MPI call never runs Python's SIGTERM handler, so a polite
        # stop waits 5 s and then kills mpiexec. Kill the engines through their nannies
        # instead: mpiexec sees its ranks die and ends the whole job at once.
        try:
            self.client.send_signal("SIGKILL", targets=list(self.ranks), block=True)
        except Exception:  # noqa: BLE001 - engines already gone: nothing to kill
            pass
        level = self.cluster.log.level
        self.cluster.log.setLevel(max(self.log_level, logging.ERROR))  # the kill is expected
        try:
            self.cluster.stop_engines_sync()
        finally:
            self.cluster.log.setLevel(level)
        _wait_until(lambda: not self.client.ids, timeout=30, what="the old engines to unregister")
        self.cluster.start_engines_sync(self.n)
        self._connect_engines()
        return self

    def interrupt(self, signal: str = "SIGINT") -> None:
        """Send *signal* to every engine (wakes Python code, not a blocked MPI call)."""
        self._require_running()
        self.client.send_signal(signal, targets=list(self.ranks), block=True)

    def __enter__(self) -> "Session":
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} n={self.n} cluster_id={self.cluster_id!r} state={self.state}>"

    def _require_running(self) -> None:
        if self.view is None:
            raise RuntimeError("the workbench is not running; call wb.start() first")

    # ------------------------------------------------------------------ execution
    def run_async(self, func: Callable[..., Any], *args: Any, **kwargs: Any):
        """Submit ``func(*args, **kwargs)`` on every rank; return the AsyncResult."""
        self._require_running()
        return self.view.apply_async(func, *args, **kwargs)

    def gather(self, ar, timeout: float | None | str = "default") -> list[Any]:
        """Wait for *ar* (hang-protected) and return its results in rank order."""
        limit = self.timeout if timeout == "default" else timeout
        wait_ranks(ar, self.ranks, limit, grace=self.failure_grace)
        return list(ar.get())

    def run(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Run ``func(*args, **kwargs)`` on every rank; results in rank order.

        Raises :class:`~mpiworkbench.RankFailure` (every rank finished, some raised) or
        :class:`~mpiworkbench.ExecutionTimeout` (ranks still running after
        :attr:`timeout`), each with a rank-by-rank report.
        """
        return self.gather(self.run_async(func, *args, **kwargs))

    def execute(self, code: str) -> None:
        """Execute *code* in every engine's namespace (what ``%%px`` does), hang-protected."""
        self._require_running()
        ar = self.view.execute(code, block=False)
        wait_ranks(ar, self.ranks, self.timeout, grace=self.failure_grace)

    def pull(self, name: str, rank: int = 0) -> Any:
        """The value of *name* in one rank's namespace (gather to that rank with MPI first)."""
        self._require_running()
        engine = {r: e for e, r in self.ranks.items()}[rank]
        return self.client[engine].pull(name, block=True)

    # ------------------------------------------------------------------ remote objects
    def create(self, factory: str, *args: Any, nranks: int | None = None, **kwargs: Any) -> "RemoteObject":
        """Build ``factory(*args, **kwargs)`` on every engine and return a handle to it."""
        self._require_running()
        key = f"obj-{uuid.uuid4().hex[:10]}"
        holds = self.run(objects.create, key, factory, args, kwargs, nranks)
        return RemoteObject(self, key, factory, holds)

    # ------------------------------------------------------------------ facts
    def info(self) -> list[dict[str, Any]]:
        """Per-rank facts: rank, host, pid, thread level (rank order)."""
        return self.run(machine.rank_info)

    def environment(self) -> dict[str, Any]:
        """The engines' environment (MPI library, versions, hosts, cores, backends), from rank 0."""
        return self.run(engine_environment)[0]
