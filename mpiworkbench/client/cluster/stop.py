"""Ending a cluster's engines or the whole cluster: a stop, a kill of ranks blocked in MPI through
their nannies, and what ipyparallel would otherwise print about engines that were meant to end."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import Any, Iterable, Iterator

from mpiworkbench.client.cluster import leftovers
from mpiworkbench.client.cluster.start import HEARTBEAT_MISSES, HEARTBEAT_MS
from mpiworkbench.client.cluster.watchdog import end_cluster, engine_state_file


def own_output_files(launchers: Iterable[Any]) -> None:
    """Remove the output files of *launchers* (ipyparallel's engine and controller launchers)
    before they are ended, so that one owner removes each.

    ipyparallel removes a launcher's file twice when its process ends: from the thread that
    waits for the process, and from the stop. In a kernel the two run on different threads,
    and the second printed "Failed to remove …/ipengine-….log: [Errno 2] No such file or
    directory" into the notebook above the stop's own sentence. Removed here first, neither
    does. The process keeps writing to the file it holds open; nothing reads it after this."""
    for launcher in launchers:
        for each in (launcher, *(getattr(launcher, "launchers", None) or {}).values()):
            path = getattr(each, "output_file", "")
            if isinstance(path, str) and path:
                with contextlib.suppress(OSError):
                    os.unlink(path)


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
    the profile, is removed (:func:`~mpiworkbench.client.cluster.watchdog.engine_state_file`). What
    ranks on this host killed rather than stopped (blocked in MPI, or dead before) leave in
    ``/dev/shm`` is removed: those recorded through
    *client* (the session's, closed or not) and those below the local ``mpiexec``. Ranks on
    other hosts keep theirs there (:mod:`~mpiworkbench.client.cluster.leftovers`). Returns the paths
    removed.
    """
    world = leftovers.before_kill(cluster, client)
    own_output_files([*(cluster.engines or {}).values(), *([cluster.controller] if cluster.controller else [])])
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
    (:func:`~mpiworkbench.client.cluster.leftovers.before_kill`; also remembered there): pass them to
    :func:`~mpiworkbench.client.cluster.leftovers.after_kill` to remove what they leave in ``/dev/shm``.

    Waits at most *timeout* seconds for the nannies to confirm: a nanny exits with its engine,
    so one signalled again before its engine has unregistered never answers.
    """
    own_output_files((cluster.engines or {}).values())  # the world ends: its output files are ours to remove
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
    the old ones' there when they are armed (:mod:`~mpiworkbench.client.cluster.leftovers`). An engine
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
