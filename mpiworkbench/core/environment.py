"""What every result carries: MPI library, versions, ranks, binding, thread level, load.

Research note §6.7/§6.10: a number without its environment is not a result, and a
number measured on a loaded or oversubscribed machine must say so.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time

from mpiworkbench.core import machine as info
#: Foreign CPU use (in cores) above which a run is flagged as measured on a loaded machine.
LOADED_CORES = 0.25
LOAD_WINDOW_S = 0.3


def _cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine from /proc/stat, or None off Linux."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def busy_cores(window_s: float = LOAD_WINDOW_S) -> float | None:
    """Cores the whole machine kept busy over the next *window_s* seconds (None off Linux)."""
    before = _cpu_jiffies()
    time.sleep(window_s)
    after = _cpu_jiffies()
    if before is None or after is None:
        return None
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return (after[0] - before[0]) / hz / window_s


def _own_jiffies() -> int | None:
    try:
        with open("/proc/self/stat") as fh:
            parts = fh.read().rsplit(")", 1)[1].split()
        return int(parts[11]) + int(parts[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def capture(comm, measure_load: bool = True) -> dict:
    """Collective: describe the environment of a run (every rank contributes; all get it).

    Background load is sampled while every rank sleeps (so our own busy-polling ranks are
    not counted): foreign cores busy = (machine busy − our ranks' CPU time) / window.
    """
    from mpi4py import MPI

    host = socket.gethostname()
    affinity = info.affinity()
    comm.Barrier()
    load = None
    if measure_load:
        before, own_before, t0 = _cpu_jiffies(), _own_jiffies(), time.monotonic()
        time.sleep(LOAD_WINDOW_S)
        after, own_after, elapsed = _cpu_jiffies(), _own_jiffies(), time.monotonic() - t0
        own = None if own_before is None or own_after is None else own_after - own_before
        load = (before, after, own, elapsed)
    per_rank = comm.allgather({"host": host, "affinity": affinity, "load": load})
    hosts: dict[str, list[int]] = {}
    for rank, item in enumerate(per_rank):
        hosts.setdefault(item["host"], []).append(rank)
    cores_here = len(set().union(*(set(p["affinity"]) for p in per_rank if p["host"] == host)))
    ranks_here = len(hosts[host])
    foreign = None
    samples = [p["load"] for p in per_rank if p["host"] == host and p["load"] and p["load"][0]]
    if samples:
        before, after, _, elapsed = samples[0]
        own_total = sum(p["load"][2] or 0 for p in per_rank if p["host"] == host and p["load"])
        hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        busy = (after[0] - before[0]) - own_total
        foreign = max(0.0, busy / hz / elapsed)
    library = info.mpi_library()
    env = {
        "mpi_library": library["library"],
        "mpi_standard": library["mpi_standard"],
        "mpi_vendor": "%s %s" % (MPI.get_vendor()[0], ".".join(map(str, MPI.get_vendor()[1]))),
        "thread_level": library["thread_level"],
        "python": sys.version.split()[0],
        "packages": info.package_versions(),
        "np": comm.Get_size(),
        "hosts": {h: r for h, r in hosts.items()},
        "binding": {str(r): p["affinity"] for r, p in enumerate(per_rank)},
        "cores_online": os.cpu_count(),
        "cores_available": cores_here,
        "cpu": _cpu_model(),
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        "foreign_load_cores": None if foreign is None else round(foreign, 3),
        "oversubscribed": ranks_here > cores_here,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    env["warnings"] = warnings(env)
    return env


def warnings(env: dict) -> list[str]:
    """Human-readable flags for a contaminated environment (empty when clean)."""
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


def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None
