"""The clusters a session runs on: a new one of its own (:func:`new_cluster`), or one
started elsewhere — find the one a profile's ``ipcluster`` (or JupyterLab's
*IPython Parallel* sidebar, or a Slurm job) is running, so a session can attach to it.

ipyparallel writes a cluster file (``security/cluster-<id>.json`` in the profile
directory) while a cluster runs; it names the controller and engine launchers, which is
all a second process needs to connect a client, restart the engines or stop the whole
cluster. A file whose controller process is gone is stale and ignored.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import weakref
from pathlib import Path
from typing import Any, Iterable, Iterator

from mpiworkbench.client import allocation, controller, leftovers
from mpiworkbench.client.caches import forget
from mpiworkbench.client.engine_start import CONNECTION_FILE_VARIABLE, ENGINE_CMD
from mpiworkbench.client.watchdog import connection_file, end_cluster, engine_state_file
from mpiworkbench.client.world import recorded_engine_set, world_directory
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
    # ipengine with its nanny started at once (mpiworkbench.client.engine_start)
    config.MPIEngineSetLauncher.engine_cmd = list(ENGINE_CMD)
    return config


def new_cluster(n: int, cluster_id: str, controller_ip: str = "127.0.0.1", thread_level: str | None = None,
                log_level: int = 30, yield_while_waiting: bool | None = None, mpi: str | None = None):
    """A (not yet started) :class:`ipyparallel.Cluster` of *n* MPI engines on this machine:
    the mpiexec of MPI implementation *mpi* (:mod:`mpiworkbench.core.implementations`; default:
    this process's), one BLAS thread per rank, a fast heartbeat, a controller in one process
    (:mod:`~mpiworkbench.client.controller`).
    *yield_while_waiting*: MPICH ranks yield their core while waiting
    (:data:`mpiworkbench.core.launch.YIELD_WHILE_WAITING`; default from
    ``$MPIWORKBENCH_YIELD_WHILE_WAITING``), for more ranks than cores.
    Inside a Slurm job the ranks are the job's (:mod:`~mpiworkbench.client.allocation`): its
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


def ipython_dir() -> Path:
    """The IPython directory (``$IPYTHONDIR`` or ``~/.ipython``), where profiles live."""
    from IPython.paths import get_ipython_dir

    return Path(get_ipython_dir())


def profile_dir(profile: str, ipython_dir_: str | None = None) -> Path:
    """The directory of IPython profile *profile* (it may not exist)."""
    return Path(ipython_dir_ or ipython_dir()) / f"profile_{profile}"


def profiles(ipython_dir_: str | None = None) -> list[str]:
    """The IPython profiles that have a cluster configuration (``ipcluster_config.py``)."""
    root = Path(ipython_dir_ or ipython_dir())
    return sorted(p.name[len("profile_"):] for p in root.glob("profile_*") if (p / "ipcluster_config.py").exists())


def alive(process: Any) -> bool:
    """Whether a launcher's local process (a ``psutil.Process``) still runs."""
    try:
        return process.is_running() and process.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil: the process is gone
        return False


def controller_alive(cluster) -> bool:
    process = getattr(cluster.controller, "process", None)
    if process is not None:
        return alive(process)
    return getattr(cluster.controller, "state", None) == "running"


def engines_recorded(cluster_file: str | Path) -> bool:
    """Whether *cluster_file* (ipyparallel's, e.g. ``ipcluster``'s ``cluster-.json``) is written
    and records engines: the cluster is up."""
    import json

    try:
        data = json.loads(Path(cluster_file).read_text())
    except (OSError, ValueError):  # not there yet, or caught half-written
        return False
    return bool((data.get("engines") or {}).get("sets"))


def running_cluster(profile: str = "default", cluster_id: str = "", ipython_dir_: str | None = None,
                    required: bool = False):
    """The running :class:`ipyparallel.Cluster` of *profile* and *cluster_id*, or ``None``.

    ``cluster_id=""`` is what ``ipcluster start`` and the sidebar use by default. With
    *required*, raise ``RuntimeError`` saying how to start one instead of returning ``None``.
    """
    found = _running_cluster(profile, cluster_id, ipython_dir_)
    if found is None and required:
        raise RuntimeError(
            f"no cluster of profile {profile!r} (cluster id {cluster_id!r}) is running; start one "
            f"with `ipcluster start -n 2 --profile={profile}` or JupyterLab's IPython Parallel sidebar "
            f"(profile {profile}, START), or let the workbench start its own: Workbench(n=2).start()"
        )
    return found


def _running_cluster(profile: str, cluster_id: str, ipython_dir_: str | None):
    import ipyparallel as ipp

    directory = profile_dir(profile, ipython_dir_)
    cluster_file = directory / "security" / f"cluster-{cluster_id}.json"
    if not cluster_file.exists():
        return None
    try:
        # from_file alone does not read the profile's ipcluster_config.py, which restarting
        # the engines needs (the mpiexec to use, a Slurm batch template): load it first
        profile_config = ipp.Cluster(profile_dir=str(directory), cluster_id=cluster_id,
                                     shutdown_atexit=False).profile_config
        cluster = ipp.Cluster.from_file(str(cluster_file), config=restoring(profile_config, directory),
                                        profile_dir=str(directory), cluster_id=cluster_id)
        restored(cluster)
    except (OSError, ValueError, KeyError):
        return None  # half-written or foreign file: not a cluster we can attach to
    if cluster.controller is None or not controller_alive(cluster):
        return None
    quiet(cluster)
    if launcher_name(cluster) == "mpi" and "mpi_cmd" not in profile_config.get("MPILauncher", {}):
        # a workbench's own cluster (its profile says nothing of how to start engines): a
        # restart from here starts them as the workbench that started it did, not with
        # ipyparallel's defaults (a bare mpiexec from PATH, no interposer)
        record = recorded_engine_set(world_directory(directory, cluster_id)) or {}
        cluster.update_config(engine_config(engine_count(cluster) or 1, record.get("thread_level"),
                                            mpi=record.get("mpi")))
    # Attached, we only watch: without this, noticing the owner's engines stop (a restart
    # from another notebook) would rewrite the owner's file from our stale view and drop the
    # engines recorded there. Writes are allowed only where we act (see `acting_on`), to the
    # file we read it from.
    _attached_files[cluster], cluster.cluster_file = str(cluster_file), ""
    return cluster


#: The cluster file an attached session read its cluster from (where :func:`acting_on` writes).
_attached_files: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def restoring(config, directory: Path):
    """*config* (a profile's) for restoring a cluster from its file. ipyparallel's batch
    launchers (Slurm's), restored, work out their default output file before they know their
    profile, and so create ``log/`` in the current directory (the notebook's); with an output
    file named they do not, and each takes its own from the cluster file right after."""
    import copy

    config = copy.deepcopy(config)
    config.BatchSystemLauncher.output_file = str(Path(directory, "log", "restored-engines.log"))
    return config


def restored(cluster) -> None:
    """Undo :func:`restoring` on the restored *cluster*: engine sets it starts later (a
    restart) name their own output files."""
    cluster.config.BatchSystemLauncher.pop("output_file", None)


@contextlib.contextmanager
def acting_on(cluster, attached: bool) -> Iterator[None]:
    """While an attached session changes *cluster* (restarts its engines, stops it), let its
    cluster object record the change in the cluster file, which the owner's ``ipcluster
    stop`` reads. A cluster the session started records its changes anyway."""
    if not attached:
        yield
        return
    cluster.cluster_file = _attached_files[cluster]
    try:
        yield
    finally:
        cluster.cluster_file = ""


def rank_map(client, n: int, timeout: float | None) -> dict[int, dict[str, Any]]:
    """Engine id → :func:`~mpiworkbench.core.machine.rank_info` (rank, host, pid, thread level)
    of the *n* engines of *client*'s cluster, once all have registered.

    Raises
    ------
    TimeoutError
        When the engines have not all registered, or not all answered, within *timeout*
        seconds (``None``: wait for ever): ranks busy with other work or blocked in MPI.
    """
    client.wait_for_engines(n, timeout=-1 if timeout is None else timeout)
    ar = client[:].apply_async(machine.rank_info)
    if not ar.wait(timeout):
        answered = sum(part.done() for part in ar.split())
        raise TimeoutError(f"{answered} of {len(ar.split())} engines answered within {timeout} s")
    infos = ar.get_dict()
    forget(ar, (client.history,))
    leftovers.remember_ranks(client, infos)  # what their files in /dev/shm are, should they be killed
    check_one_world(infos, n)
    return infos


def check_one_world(infos: dict[int, dict[str, Any]], n: int) -> None:
    """Refuse engines that are not the *n* ranks of one MPI world (:func:`rank_map`'s answers):
    a launcher and an MPI library that do not belong together start one world per engine."""
    sizes = sorted({info["size"] for info in infos.values()})
    ranks = sorted(info["rank"] for info in infos.values())
    if sizes == [n] and ranks == list(range(n)):
        return
    libraries = sorted({str(info.get("mpi", "?")) for info in infos.values()})
    raise RuntimeError(
        f"the {len(infos)} engines are not the ranks of one MPI world of {n}: they report world "
        f"size(s) {sizes} and ranks {ranks} (MPI library: {', '.join(libraries)}). The mpiexec that "
        "started them does not belong to the MPI library mpi4py loaded: start the cluster with one "
        "implementation's own launcher (Workbench(mpi=...), `mpiworkbench profile create --mpi ...`) "
        "and do not set MPI4PY_LIBMPI by hand")


def engine_count(cluster) -> int:
    """How many engines the cluster's launchers started (its MPI world's size)."""
    return sum(int(getattr(launcher, "n", 0) or 0) for launcher in (cluster.engines or {}).values())


def launcher_name(cluster) -> str:
    """``"mpi"``, ``"slurm"``, … — which ipyparallel launcher started the engines."""
    names = {type(launcher).__name__ for launcher in (cluster.engines or {}).values()}
    short = {name.replace("EngineSetLauncher", "").lower() or "local" for name in names}
    return ", ".join(sorted(short)) or "none"


def local_processes(cluster) -> dict[str, Any]:
    """Engine set id → its launcher's local process (``mpiexec``); batch launchers have none."""
    found = {key: getattr(launcher, "process", None) for key, launcher in (cluster.engines or {}).items()}
    return {key: process for key, process in found.items() if process is not None}


def drop_ended_engine_sets(cluster) -> None:
    """Forget *cluster*'s local engine sets whose ``mpiexec`` has ended (another notebook
    restarted the world: the new engines are not in this cluster object), so that they do not
    make :func:`engines_exited` read the new world as dead."""
    for key, process in local_processes(cluster).items():
        if not alive(process):
            cluster.engines.pop(key, None)


def engines_exited(cluster) -> bool:
    """Whether a local engine launcher (``mpiexec``) has ended: the MPI world is gone.

    Batch launchers (Slurm) have no local process; for them this is ``False`` and the
    session relies on the engines' registrations instead.
    """
    return any(not alive(process) for process in local_processes(cluster).values())


@contextlib.contextmanager
def _expected_engine_exit(cluster, log_level: int) -> Iterator[None]:
    # mpiexec ends with a non-zero code when its engines are terminated, which ipyparallel
    # logs as a warning with the engines' whole log: expected here, so quiet while it happens.
    level = cluster.log.level
    cluster.log.setLevel(max(log_level, logging.ERROR))
    try:
        yield
    finally:
        cluster.log.setLevel(level)


def stop_cluster(cluster, log_level: int = logging.WARNING, client=None) -> list[str]:
    """Stop *cluster*'s engines, then its controller (what ``Session.stop`` does to its own).

    Stopped together (ipyparallel's ``stop_cluster``), the engines lose the hub mid-shutdown
    and take about 3 s longer to exit. The hub's engine state file, which ipyparallel leaves in
    the profile, is removed (:func:`~mpiworkbench.client.watchdog.engine_state_file`). What
    ranks on this host killed rather than stopped (blocked in MPI, or dead before) leave in
    ``/dev/shm`` is removed: those recorded through
    *client* (the session's, closed or not) and those below the local ``mpiexec``. Ranks on
    other hosts keep theirs there (:mod:`~mpiworkbench.client.leftovers`). Returns the paths
    removed.
    """
    world = leftovers.before_kill(cluster, client)
    with _expected_engine_exit(cluster, log_level):
        cluster.stop_engines_sync()
        cluster.stop_controller_sync()
    engine_state_file(cluster.profile_dir, cluster.cluster_id).unlink(missing_ok=True)
    removed = leftovers.after_kill(world, restarting=False)
    # engines another notebook started (its restart of this world) are not in this cluster
    # object: whatever of the cluster still runs on this host ends too (by its identity)
    end_cluster(str(cluster.profile_dir), cluster.cluster_id)
    return removed


def kill_ranks(cluster, client, engine_ids: Iterable[int], timeout: float = 2.0) -> list[dict[str, Any]]:
    """SIGKILL the engines *engine_ids* of *client* through their ipyparallel nannies (a rank
    blocked in MPI dies too; ``mpiexec`` then ends the whole job). Engines already gone are
    skipped. Returns the footprints of the killed ranks, taken just before
    (:func:`~mpiworkbench.client.leftovers.before_kill`; also remembered there): pass them to
    :func:`~mpiworkbench.client.leftovers.after_kill` to remove what they leave in ``/dev/shm``.

    Waits at most *timeout* seconds for the nannies to confirm: a nanny exits with its engine,
    so one signalled again before its engine has unregistered never answers.
    """
    engine_ids = list(engine_ids)
    world = leftovers.before_kill(cluster, client, engine_ids)
    try:
        registered = set(client.ids)
        targets = [engine for engine in engine_ids if engine in registered]
        if targets:
            client.send_signal("SIGKILL", targets=targets, block=False).result(timeout)
    except Exception:  # noqa: BLE001 - engines already gone (or no answer in time): nothing to kill
        pass
    return world


#: Seconds the controller takes at most to drop an engine it cannot reach (missed heartbeats).
UNREACHABLE_DROP_S = HEARTBEAT_MS * HEARTBEAT_MISSES / 1000


def kill_engines(cluster, client, engine_ids: Iterable[int], log_level: int = logging.WARNING,
                 timeout: float = UNREACHABLE_DROP_S + 30.0) -> list[str]:
    """End *cluster*'s engines at once, even ranks blocked in an MPI call; the controller stays.

    A rank blocked in an MPI call never runs Python's SIGTERM handler, so a polite stop waits
    5 s and then kills ``mpiexec``. The engines are killed through their nannies instead:
    ``mpiexec`` sees its ranks die and ends the whole job at once. Returns when the old
    engines have unregistered from the controller and the files the killed ranks of this host
    left in ``/dev/shm`` are removed (the paths removed); the new ranks on other hosts remove
    the old ones' there when they are armed (:mod:`~mpiworkbench.client.leftovers`). An engine
    the controller cannot reach (its host's link down) unregisters only when its heartbeats
    have been missed for :data:`UNREACHABLE_DROP_S`: *timeout* waits longer than that.
    """
    world = kill_ranks(cluster, client, engine_ids)
    with _expected_engine_exit(cluster, log_level):
        cluster.stop_engines_sync()
    deadline = time.monotonic() + timeout
    while client.ids:
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for the old engines to unregister")
        time.sleep(0.05)
    return leftovers.after_kill(world)


class _Quiet(logging.Filter):
    """Keeps ipyparallel from writing a dead world's output (dozens of lines of every engine's
    log, "Output for ipengine-…") and its launcher's exit data into whatever cell runs when its
    thread notices: the session says once what happened
    (:func:`~mpiworkbench.client.health.how_it_ended`), and the output stays one call away
    (:func:`~mpiworkbench.client.health.world_log`)."""

    SAID_ELSEWHERE = ("Output for ", "engine set stopped", "Controller stopped")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.SAID_ELSEWHERE)


def quiet(cluster) -> None:
    """Install :class:`_Quiet` on *cluster*'s log (once)."""
    log = getattr(cluster, "log", None)
    if isinstance(log, logging.Logger) and not any(isinstance(f, _Quiet) for f in log.filters):
        log.addFilter(_Quiet())


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
