"""A cluster's engine sets as they stand: how many ranks they started and under which launcher,
and the rank map the ranks report (whether they still run: :mod:`~mpiworkbench.client.cluster.health`)."""

from __future__ import annotations

import logging
import time
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from mpiworkbench.client import upstream
from mpiworkbench.client.cluster import leftovers
from mpiworkbench.client.history import drop
from mpiworkbench.core import machine


#: Seconds between two looks at whether the engines' launcher has ended, while they register.
GONE_POLL_S = 0.25
#: Seconds between asking the hub which engines it has registered while waiting for them: a
#: client connected while engines registered may not have heard of some
#: (:func:`~mpiworkbench.client.upstream.catch_up_registrations`).
CATCH_UP_S = 5.0


class LauncherEnded(TimeoutError):
    """The engines' launcher ended before they all registered (they refused, or failed, at start)."""


def rank_map(client, n: int, timeout: float | None, gone: Callable[[], bool] | None = None) -> dict[int, dict[str, Any]]:
    """Engine id → :func:`~mpiworkbench.core.machine.rank_info` (rank, host, pid, thread level)
    of the *n* engines of *client*'s cluster, once all have registered. *gone*: whether the
    engines' launcher has ended (then waiting longer is pointless).

    Raises
    ------
    TimeoutError
        When the engines have not all registered, or not all answered, within *timeout*
        seconds (``None``: wait for ever): ranks busy with other work or blocked in MPI.
        :class:`LauncherEnded` as soon as *gone* says so while they register.
    """
    wait_registered(client, n, timeout, gone)
    ar = client[:].apply_async(machine.rank_info)
    if not ar.wait(timeout):
        answered = sum(part.done() for part in ar.split())
        raise TimeoutError(f"{answered} of {len(ar.split())} engines answered within {timeout} s")
    infos = ar.get_dict()
    drop(ar, (client.history,))
    leftovers.remember_ranks(client, infos)  # what their files in /dev/shm are, should they be killed
    check_one_world(infos, n)
    return infos


def wait_registered(client, n: int, timeout: float | None, gone: Callable[[], bool] | None = None) -> None:
    """Return once *n* engines have registered with *client*'s controller (ipyparallel's
    ``wait_for_engines``, asking the hub every :data:`CATCH_UP_S` seconds for any registration the
    client did not hear of). Raises ``TimeoutError`` after *timeout* seconds (``None``: never), and
    :class:`LauncherEnded` as soon as *gone* says the engines' launcher has ended."""
    registered = client.wait_for_engines(n, timeout=-1 if timeout is None else timeout, block=False,
                                         interactive=False)
    asked = time.monotonic()
    while True:
        try:
            registered.result(timeout=GONE_POLL_S)
            break
        except FutureTimeout:
            if registered.done():
                raise  # ipyparallel's own time-out (the same exception class): they did not register in time
            if gone is not None and gone() and len(client.ids) < n:
                raise LauncherEnded(f"{len(client.ids)} of the {n} engines registered before their launcher ended") from None
            if time.monotonic() - asked > CATCH_UP_S:  # a registration this client did not hear of
                upstream.catch_up_registrations(client)
                asked = time.monotonic()


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


class _Quiet(logging.Filter):
    """Keeps ipyparallel from writing a dead world's output (dozens of lines of every engine's
    log, "Output for ipengine-…") and its launcher's exit data into whatever cell runs when its
    thread notices: the session says once what happened
    (:func:`~mpiworkbench.client.cluster.health.how_it_ended`), and the output stays one call away
    (:func:`~mpiworkbench.client.cluster.health.world_log`)."""

    SAID_ELSEWHERE = ("Output for ", "engine set stopped", "Controller stopped")

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.SAID_ELSEWHERE)


def quiet(cluster) -> None:
    """Install :class:`_Quiet` on *cluster*'s log (once)."""
    log = getattr(cluster, "log", None)
    if isinstance(log, logging.Logger) and not any(isinstance(f, _Quiet) for f in log.filters):
        log.addFilter(_Quiet())
