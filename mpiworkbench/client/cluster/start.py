"""Starting a workbench's own cluster: the controller and the MPI engines launched together, with the
settings every start shares (heartbeats, the hub's task database, how long engines wait) and the
refusals of rank counts and thread levels a start cannot honour."""

from __future__ import annotations

import math
from pathlib import Path

from mpiworkbench.client.cluster import allocation, controller
from mpiworkbench.client.cluster.engines import quiet
from mpiworkbench.client.cluster.engine_start import CONNECTION_FILE_VARIABLE, ENGINE_CMD
from mpiworkbench.client.cluster.record import footprint_directory
from mpiworkbench.client.cluster.watchdog import connection_file
from mpiworkbench.core import implementations, machine
from mpiworkbench.core.launch import world_launch
from mpiworkbench.trace.library import mpiexec_args


#: Hub heartbeat period (ms). ipyparallel's 3000 ms default is what makes a cluster take
#: ~7 s to come up: the hub only counts an engine as registered after a heartbeat round.
HEARTBEAT_MS = 250


#: Missed heartbeats tolerated before the hub drops an engine (120 × 250 ms = 30 s), so
#: oversubscribed, busy-polling ranks are never mistaken for dead ones.
HEARTBEAT_MISSES = 120


#: Seconds an engine stays without hearing the controller's heartbeat before it unregisters and
#: exits. The two tolerances are a pair: the controller drops a silent engine after
#: ``HEARTBEAT_MS * HEARTBEAT_MISSES`` (30 s: a rank's heart answers from its own thread even
#: while Python computes, so silence means a dead rank or a lost node, and a restart waits that
#: long for an unreachable engine); an engine waits much longer for a silent controller, since
#: its silence is mostly a stall (a loaded laptop, a process stopped with SIGSTOP, a debugger),
#: after which the world must still be there. ipyparallel's default (50 checks of the period
#: + 500 ms, 37.5 s here) made a world unregister itself after a 40 s stall of the controller.
#: A controller that really died leaves its engines for this long before they exit.
ENGINE_PATIENCE_S = 600.0


#: The controller's task database (ipyparallel's in-memory ``DictDB``) keeps a record of every
#: call, its result's buffers included, up to these bounds, then drops the oldest tenth. The
#: workbench reads it only for the calls still queued when a hang is reported (whose notebook
#: sent them), so it needs few records; ipyparallel's default lets it hold 1 GB of results.
#: The bytes are what a long-lived controller's memory grows by: a live panel's frames carry
#: pictures (~0.1 MB a call), and at 64 MB a 3-minute soak of three notebooks filled it and
#: the controller grew past the soak's 50 MB bound (tests/cluster/test_soak.py); 16 MB holds
#: the last ~150 frames' results.
HUB_RECORDS = 1024


HUB_BYTES = 16 * 1024**2


def hub_database_settings() -> dict[str, int]:
    """``DictDB`` trait → value: the bounds of the controller's task database."""
    return {"record_limit": HUB_RECORDS, "size_limit": HUB_BYTES}


def hub_args() -> list[str]:
    """The controller's options for the workbench's hub: its heartbeat and its task database's
    bounds (every cluster's, and the controller benchmarks')."""
    return [f"--HeartMonitor.period={HEARTBEAT_MS}", f"--HeartMonitor.max_heartmonitor_misses={HEARTBEAT_MISSES}",
            *(f"--DictDB.{name}={value}" for name, value in hub_database_settings().items())]


def engine_heartbeat_args() -> list[str]:
    """The ``ipengine`` options that set :data:`ENGINE_PATIENCE_S` (ipyparallel counts an engine's
    checks, one per heartbeat period + 500 ms)."""
    return [f"--IPEngine.max_heartbeat_misses={engine_heartbeat_misses()}"]


def engine_heartbeat_misses() -> int:
    """How many of the engine's heartbeat checks :data:`ENGINE_PATIENCE_S` is."""
    return int(math.ceil(ENGINE_PATIENCE_S * 1000 / (HEARTBEAT_MS + 500)))


#: Seconds a new engine waits for the controller's connection file. The engines are started
#: together with the controller (not once it is up), so each one's Python imports (~1 s) overlap
#: the controller's start (~1-2 s) instead of following it; an engine then reads the file the
#: controller writes. ipyparallel waits 10 s by default: an oversubscribed machine can take longer.
CONNECTION_FILE_WAIT_S = 120
#: Seconds a client waits for the controller's answer to its connection request. ipyparallel's
#: default (10 s) is short for a controller just started on a loaded machine: the suite saw
#: "Hub connection request timed out" from a fresh world's start while both lanes of the suite ran.
CONNECT_TIMEOUT_S = 120.0


def engine_config(n: int, thread_level: str | None = None, yield_while_waiting: bool | None = None,
                  mpi: str | None = None):
    """The ipyparallel configuration that starts a workbench's *n* MPI engines (a new cluster's,
    and an attached notebook's restart of a workbench's cluster, whose profile says nothing)."""
    from traitlets.config import Config

    impl = implementations.get(mpi) if mpi else implementations.current()
    config = Config()
    # The one recipe for starting ranks: the mpiexec that belongs to the implementation's
    # library (the venv's, from the mpich wheel, by default), even when the venv's bin/ is not
    # on PATH (a kernel started by a system Jupyter); its environment points mpi4py (and its
    # compilers) at that library; no wall-clock limit inherited from the caller's environment.
    launch = world_launch(impl, n, yield_while_waiting=yield_while_waiting)
    config.MPILauncher.mpi_cmd = list(launch.mpiexec)
    environment = dict(launch.environment)
    if thread_level is not None:
        environment["MPI4PY_RC_THREAD_LEVEL"] = thread_level
    config.MPIEngineSetLauncher.environment = environment
    # every rank runs with the MPI interposer preloaded: traces and hang reports
    config.MPIEngineSetLauncher.mpi_args = mpiexec_args(impl)
    config.MPIEngineSetLauncher.engine_args = [f"--IPEngine.wait_for_url_file={CONNECTION_FILE_WAIT_S}",
                                               *engine_heartbeat_args()]
    # ipengine with its nanny started at once (mpiworkbench.client.cluster.engine_start)
    config.MPIEngineSetLauncher.engine_cmd = list(ENGINE_CMD)
    return config


def new_cluster(n: int, cluster_id: str, controller_ip: str = "127.0.0.1", thread_level: str | None = None,
                log_level: int = 30, yield_while_waiting: bool | None = None, mpi: str | None = None):
    """A (not yet started) :class:`ipyparallel.Cluster` of *n* MPI engines on this machine:
    the mpiexec of MPI implementation *mpi* (:mod:`mpiworkbench.core.implementations`; default:
    this process's), one BLAS thread per rank, a fast heartbeat, a controller in one process
    (:mod:`~mpiworkbench.client.cluster.controller`).
    *yield_while_waiting*: MPICH ranks yield their core while waiting
    (:data:`mpiworkbench.core.launch.YIELD_WHILE_WAITING`; default from
    ``$MPIWORKBENCH_YIELD_WHILE_WAITING``), for more ranks than cores.
    Inside a Slurm job the ranks are the job's (:mod:`~mpiworkbench.client.cluster.allocation`): its
    ``mpiexec`` places them on the job's nodes, the controller listens where they reach it."""
    import ipyparallel as ipp

    job = allocation.current()
    controller_ip = allocation.controller_address(controller_ip, job)
    config = engine_config(n, thread_level, yield_while_waiting, mpi)
    config.LocalControllerLauncher.controller_cmd = controller.COMMAND  # one process, schedulers as threads
    cluster = ipp.Cluster(
        config=config,
        engines="mpi",
        n=n,
        cluster_id=cluster_id,
        controller_ip=controller_ip,
        controller_args=[
            *controller.ARGS,
            *hub_args(),
            # beyond loopback (a job's nodes), encrypted as a profile with --ip is
            *(["--IPController.enable_curve=True"] if controller_ip not in allocation.LOOPBACK else []),
        ],
        delay=0,
        log_level=log_level,
        shutdown_atexit=True,
    )
    quiet(cluster)
    # Each rank records its files in /dev/shm here (engine_start: the directory named by the
    # IPP_PROFILE_DIR and IPP_CLUSTER_ID ipyparallel gives it), where the watchdog reads them after
    # the rank's death (Hydra's proxy, ending a job, sends its ranks SIGKILL right after SIGTERM)
    footprint_directory(cluster.profile_dir, cluster.cluster_id).mkdir(parents=True, exist_ok=True)
    # Engines read the controller's connection file instead of waiting, with mpiexec unlaunched,
    # for ipyparallel to pass it in their environment: see CONNECTION_FILE_WAIT_S. Only while
    # no file of that name exists yet (a fresh cluster id): a file left by a dead controller of
    # the same id would send the engines to it.
    connection_file = engine_connection_file(cluster)
    cluster.send_engines_connection_env = connection_file.exists()
    if not cluster.send_engines_connection_env:
        # the controller writes the file in place: the engines wait until it is whole
        cluster.config.MPIEngineSetLauncher.environment[CONNECTION_FILE_VARIABLE] = (
            f"{connection_file}:{CONNECTION_FILE_WAIT_S}")
    return cluster


def engine_connection_file(cluster) -> Path:
    """Where *cluster*'s controller writes the connection file its engines read."""
    return connection_file(cluster.profile_dir, cluster.cluster_id, "engine")


def check_start_options(n: int, thread_level: str | None, oversubscribe: bool) -> None:
    """Refuse a rank count or thread level a new cluster cannot start with, saying why (inside a
    Slurm job: more ranks than its tasks; this machine's cores are not what Slurm granted)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive number of MPI ranks; got {n!r}")
    cores, job = machine.cores(), allocation.current()
    if job is not None:
        allocation.check_size(n, job)
    elif n > cores and not oversubscribe:
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
