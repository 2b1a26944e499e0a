"""Facts about the MPI environment: library, versions, thread level, cores, backends.

Engine-side safe (no ipyparallel). :func:`environment` describes this process and
:func:`rank_info` one rank; the CLI's ``info`` command, the control panel and every
benchmark result use them, so a number never travels without its context.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from importlib import metadata
from typing import Any

from mpiworkbench import __version__

from mpiworkbench.core import mpi
_PACKAGES = ("mpi4py", "mpich", "numpy", "scipy", "numba", "numba-mpi", "ipyparallel", "matplotlib")

#: MPI thread levels, lowest first, by mpi4py's names (``MPI.THREAD_SINGLE`` … ``THREAD_MULTIPLE``).
THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


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
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def thread_level_name(level: int) -> str:
    """``"multiple"`` for ``MPI.THREAD_MULTIPLE`` and so on."""
    MPI = mpi.MPI()
    for name in THREAD_LEVELS:
        if getattr(MPI, f"THREAD_{name.upper()}") == level:
            return name
    return str(level)


def mpi_library() -> dict[str, Any]:
    """MPI standard version, library name and version string (initialises MPI)."""
    MPI = mpi.MPI()
    version_string = MPI.Get_library_version().strip()
    first_line = version_string.splitlines()[0] if version_string else ""
    return {
        "library": " ".join(first_line.split()),
        "library_version": version_string,
        "mpi_standard": "{}.{}".format(*MPI.Get_version()),
        "thread_level": thread_level_name(MPI.Query_thread()),
    }


def rank_info(comm=None) -> dict[str, Any]:
    """This rank's place in the world: rank, size, host, pid, thread level."""
    comm = mpi.resolve_comm(comm)
    MPI = mpi.MPI()
    return {
        "rank": comm.rank,
        "size": comm.size,
        "host": socket.gethostname(),
        "processor": MPI.Get_processor_name(),
        "pid": os.getpid(),
        "thread_level": thread_level_name(MPI.Query_thread()),
    }


def backends_available() -> dict[str, Any]:
    """Which communication backends run here (empty if the backends layer is absent)."""
    try:
        from mpiworkbench import backends
    except ImportError:
        return {}
    try:
        names = backends.backend_names()
    except AttributeError:
        return {}
    result: dict[str, Any] = {}
    for name in names:
        try:
            backends.get_backend(name)
            result[name] = True
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            result[name] = f"unavailable: {exc}"
    return result


def environment(comm=None, include_backends: bool = True) -> dict[str, Any]:
    """Everything a result should carry about where it was measured."""
    comm = mpi.resolve_comm(comm)
    env: dict[str, Any] = {
        "mpiworkbench": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "host": socket.gethostname(),
        "cores": cores(),
        "np": comm.size,
        "oversubscribed": comm.size > cores(),
        "packages": package_versions(),
        **mpi_library(),
    }
    try:
        env["load_average"] = list(os.getloadavg())
    except OSError:
        env["load_average"] = None
    if include_backends:
        env["backends"] = backends_available()
    return env
