"""Where a number was measured: MPI library, versions, thread level, hosts, cores, load.

A number without its environment is not a result, and a number measured on a loaded or
oversubscribed machine must say so (research note §6.7/§6.10). This module is the one
place those facts are collected:

* :func:`local_facts` — this process, without MPI (the speedup planner's ``machine``);
* :func:`capture` — the collective snapshot of a run, every rank contributing: the CLI's
  ``info``, the client's ``environment()`` and every benchmark result use it;
* :func:`ranks_per_host` / :func:`placement` — ranks and cores per host, the one rule
  for "oversubscribed" (bench environment and speedup points alike);
* :func:`rank_info` — one rank's place in the world (the control panel's table).

Engine-side safe: imports neither ipyparallel nor (until a collective is called) mpi4py.
Which communication backends are available is the backends layer's fact; callers that
show it (``mpiworkbench info``, the client) add it themselves.
"""

from __future__ import annotations

import getpass
import os
import platform
import socket
import sys
import time
from importlib import metadata
from typing import Any, Iterable

from mpiworkbench import __version__
from mpiworkbench.core import implementations, launch, mpi, mpifiles
from mpiworkbench.core.load import LOADED_CORES, foreign_load, sample_load

_PACKAGES = ("mpi4py", "mpich", "numpy", "scipy", "numba", "numba-mpi", "ipyparallel", "matplotlib")

#: MPI thread levels, lowest first, by mpi4py's names (``MPI.THREAD_SINGLE`` … ``THREAD_MULTIPLE``).
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")



# -- this process (no MPI) --------------------------------------------------------------
def affinity() -> list[int]:
    """The CPUs this process may run on (respects affinity masks and cgroup pinning)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def cores() -> int:
    """How many CPU cores this process may run on."""
    return len(affinity())


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages a result depends on (``None``: not installed)."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def load_average() -> list[float] | None:
    """The host's 1, 5 and 15-minute load averages (``None`` where the OS has none)."""
    try:
        return list(os.getloadavg())
    except (AttributeError, OSError):
        return None


def user() -> str:
    """The login name running this process (``""`` when it cannot be told)."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - only informative
        return ""


def local_facts() -> dict[str, Any]:
    """This process's facts, no MPI needed.

    Returns
    -------
    dict
        ``mpiworkbench`` (version), ``python``, ``platform``, ``machine``, ``host``,
        ``cores`` (CPUs this process may use) and ``load_average`` (list or ``None``).
    """
    return {
        "mpiworkbench": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "host": socket.gethostname(),
        "cores": cores(),
        "load_average": load_average(),
    }


# -- MPI library ------------------------------------------------------------------------
def thread_level_name(level: int) -> str:
    """``"multiple"`` for ``MPI.THREAD_MULTIPLE`` and so on."""
    MPI = mpi.MPI()
    for name in THREAD_LEVELS:
        if getattr(MPI, f"THREAD_{name.upper()}") == level:
            return name
    return str(level)


def mpi_library() -> dict[str, Any]:
    """MPI standard version, library name, version string and the library file this process
    mapped (``library_file``: :mod:`mpiworkbench.core.onempi` holds it to one) (initialises MPI)."""
    MPI = mpi.MPI()
    version_string = MPI.Get_library_version().replace("\x00", "").strip()  # (Open MPI ends it with NUL)
    first_line = version_string.splitlines()[0] if version_string else ""
    return {
        "mpi": implementations.detect(version_string) or "other",
        "library": " ".join(first_line.split()),
        "library_version": version_string,
        "library_file": (mpifiles.mpi_files() or [""])[0],
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "thread_level": thread_level_name(MPI.Query_thread()),
    }


def rank_info(comm=None) -> dict[str, Any]:
    """This rank's place in the world: rank, size, host, pid, thread level, MPI implementation
    (:mod:`~mpiworkbench.core.implementations`' name, ``"other"`` for an unregistered one)."""
    comm = mpi.resolve_comm(comm)
    MPI = mpi.MPI()
    return {
        "rank": comm.rank,
        "size": comm.size,
        "host": socket.gethostname(),
        "processor": MPI.Get_processor_name(),
        "pid": os.getpid(),
        "thread_level": thread_level_name(MPI.Query_thread()),
        "mpi": implementations.detect(MPI.Get_library_version()) or "other",
    }


# -- ranks and cores per host -----------------------------------------------------------
def ranks_per_host(per_rank: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Group gathered per-rank entries by host: the one rule for cores and oversubscription.

    Parameters
    ----------
    per_rank
        One entry per rank, in rank order, with ``host``, ``affinity`` (CPU ids) and
        optionally ``active`` (default ``True``: the rank takes part in the timed work).

    Returns
    -------
    dict
        ``{host: {"ranks": [rank, ...], "cores": n, "active_ranks": k}}``. A host's cores
        are the union of the CPU sets its ranks may use; it is oversubscribed when
        ``active_ranks > cores``.
    """
    hosts: dict[str, dict[str, Any]] = {}
    cpus: dict[str, set[int]] = {}
    for rank, entry in enumerate(per_rank):
        host = entry["host"]
        h = hosts.setdefault(host, {"ranks": [], "cores": 0, "active_ranks": 0})
        h["ranks"].append(rank)
        h["active_ranks"] += int(bool(entry.get("active", True)))
        cpus.setdefault(host, set()).update(entry["affinity"])
    for host, h in hosts.items():
        h["cores"] = len(cpus[host])
    return hosts


def oversubscribed(hosts: dict[str, dict[str, Any]]) -> bool:
    """Whether some host of :func:`ranks_per_host` runs more active ranks than it has cores."""
    return any(h["active_ranks"] > h["cores"] for h in hosts.values())


#: Which ranks of the world a point of fewer ranks takes (:func:`rank_order`): ``packed`` fills
#: one host before the next (its messages stay within a node: shared memory), ``spread`` takes
#: one rank of each host in turn (they cross the nodes: the network). On one host both take
#: the same ranks.
PLACEMENTS = ("packed", "spread")


def check_placement(place: str) -> str:
    """*place* if it is one of :data:`PLACEMENTS`, else a ``ValueError`` naming the choices."""
    if place not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}; got {place!r}")
    return place


def rank_order(hosts: list[str], place: str = PLACEMENTS[0]) -> list[int]:
    """The world's ranks in the order a point of fewer ranks takes them: the first *n* of it.

    *hosts*: each rank's host (``hosts[rank]``). Hosts are taken in order of their lowest
    rank, and ranks on a host by rank, so rank 0 always comes first. ``"packed"``: every rank
    of the first host, then of the next (messages stay within a node as long as they can);
    ``"spread"``: the first rank of each host, then the second of each, … (every point of
    two or more ranks crosses nodes when there are several).
    """
    check_placement(place)
    per_host: dict[str, list[int]] = {}
    for rank, host in enumerate(hosts):
        per_host.setdefault(host, []).append(rank)
    groups = list(per_host.values())
    if place == "packed":
        return [rank for group in groups for rank in group]
    depth = max((len(g) for g in groups), default=0)  # spread
    return [g[i] for i in range(depth) for g in groups if i < len(g)]


def placement(comm, active: bool = True) -> dict[str, Any]:
    """Collective: active and resident ranks and cores per host, and oversubscription.

    Parameters
    ----------
    comm
        The communicator whose ranks are placed (all of them call this).
    active
        Whether this rank takes part in the work being timed.

    Returns
    -------
    dict
        ``{"hosts": {host: {"cores", "active_ranks", "resident_ranks"}}, "cores": total,
        "oversubscribed": bool}``, the same on every rank.
    """
    hosts = ranks_per_host(comm.allgather({"host": socket.gethostname(), "affinity": affinity(), "active": active}))
    report = {
        host: {"cores": h["cores"], "active_ranks": h["active_ranks"], "resident_ranks": len(h["ranks"])}
        for host, h in hosts.items()
    }
    return {
        "hosts": report,
        "cores": sum(h["cores"] for h in report.values()),
        "oversubscribed": oversubscribed(hosts),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


# -- the snapshot -----------------------------------------------------------------------
def capture(comm=None, measure_load: bool = True) -> dict[str, Any]:
    """Collective: the environment of a run; every rank contributes and all get it.

    Parameters
    ----------
    comm
        Communicator of the run (``None``: ``COMM_WORLD``). Every rank must call.
    measure_load
        Sample the machine's CPU use for :data:`~mpiworkbench.core.load.LOAD_WINDOW_S` seconds while every rank
        sleeps, so our own busy-polling ranks are not counted; ``False`` skips the wait
        (``foreign_load_cores`` is then ``None``).

    Returns
    -------
    dict
        Results keys: ``mpi`` (the implementation's registered name,
        :mod:`~mpiworkbench.core.implementations`), ``mpi_library``, ``mpi_standard``, ``mpi_vendor``,
        ``mpi_library_file`` (the MPI library file rank 0 mapped) and ``mpi_library_files`` (those of
        every rank: one file, unless ranks on other hosts map the library under other paths), ``thread_level``,
        ``python``, ``packages``, ``np``, ``transport``
        (:data:`mpiworkbench.core.launch.TRANSPORTS`), ``hosts`` (host → ranks), ``binding`` (rank →
        CPUs), ``cores_online``, ``cores_available`` (this host), ``cpu``, ``thp``,
        ``malloc_env``, ``foreign_load_cores``, ``oversubscribed``, ``timestamp`` and
        ``warnings`` (:func:`contamination_warnings`). Also the facts of
        :func:`local_facts` on this rank (``mpiworkbench``, ``platform``, ``machine``,
        ``host``, ``cores``, ``load_average``) and ``library``/``library_version``
        (the ``info`` command's names: ``library`` is ``mpi_library``).
    """
    comm = mpi.resolve_comm(comm)
    MPI = mpi.MPI()
    facts = local_facts()
    host = facts["host"]
    comm.Barrier()
    load = sample_load() if measure_load else None
    per_rank = comm.allgather({"host": host, "affinity": affinity(), "load": load, "mpi_files": mpifiles.mpi_files()})
    hosts = ranks_per_host(per_rank)
    library = mpi_library()
    vendor, version = MPI.get_vendor()
    foreign = foreign_load([p["load"] for p in per_rank if p["host"] == host])
    env = {
        **facts,
        "mpi": library["mpi"],
        "mpi_library": library["library"],
        "mpi_standard": library["mpi_standard"],
        "mpi_vendor": "%s %s" % (vendor, ".".join(map(str, version))),
        # the library file each rank mapped (mpiworkbench.core.onempi: one, the implementation's)
        "mpi_library_file": (per_rank[0]["mpi_files"] or [""])[0],
        "mpi_library_files": sorted({f for p in per_rank for f in p["mpi_files"]}),
        "thread_level": library["thread_level"],
        "library": library["library"],
        "library_version": library["library_version"],
        "packages": package_versions(),
        "np": comm.Get_size(),
        "transport": launch.transport(),
        "hosts": {h: item["ranks"] for h, item in hosts.items()},
        "binding": {str(r): p["affinity"] for r, p in enumerate(per_rank)},
        "cores_online": os.cpu_count(),
        "cores_available": hosts[host]["cores"],
        "cpu": _cpu_model(),
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        "foreign_load_cores": None if foreign is None else round(foreign, 3),
        "oversubscribed": oversubscribed({host: hosts[host]}),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    env["warnings"] = contamination_warnings(env)
    return env


def contamination_warnings(env: dict[str, Any]) -> list[str]:
    """Human-readable flags for a contaminated environment (empty when clean).

    Parameters
    ----------
    env
        A snapshot from :func:`capture` (needs ``oversubscribed``, ``hosts``,
        ``cores_available`` and ``foreign_load_cores``).
    """
    out = []
    if env.get("oversubscribed"):
        out.append(
            f"oversubscribed: {max(len(r) for r in env['hosts'].values())} ranks on "
            f"{env['cores_available']} core(s); MPICH ranks busy-poll, expect ms-scale outliers"
        )
    load = env.get("foreign_load_cores")
    if load is not None and load > LOADED_CORES:
        out.append(
            f"loaded machine: other processes used {load:.2f} core(s) just before the run; "
            "absolute times are inflated (2-3x with one busy core here, far more with both), compare ratios from one run only"
        )
    return out
