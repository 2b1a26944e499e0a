"""How busy the machine is: CPU time from ``/proc``, ours told apart from everyone else's.

A benchmark run on a loaded two-core machine is flagged, not hidden: :func:`sample_load`
is taken on every rank while the ranks sleep, and :func:`foreign_load` subtracts our own
ranks' CPU time, so busy-polling MPI ranks of this run are not counted as foreign load.
"""

from __future__ import annotations

import os
import time

__all__ = ["LOADED_CORES", "LOAD_WINDOW_S", "busy_cores", "cpu_jiffies", "foreign_load", "sample_load"]

#: Foreign CPU use (in cores) above which a run is flagged as measured on a loaded machine.
LOADED_CORES = 0.25
#: How long a snapshot and :func:`busy_cores` sample the machine's CPU use (seconds).
LOAD_WINDOW_S = 0.3


def cpu_jiffies() -> tuple[int, int] | None:
    """(busy, total) jiffies of the whole machine since it booted, from /proc/stat (busy: all but
    idle and I/O wait), or None off Linux."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _own_jiffies() -> int | None:
    try:
        with open("/proc/self/stat") as fh:
            parts = fh.read().rsplit(")", 1)[1].split()
        return int(parts[11]) + int(parts[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def busy_cores(window_s: float = LOAD_WINDOW_S) -> float | None:
    """Cores the whole machine kept busy over the next *window_s* seconds (None off Linux)."""
    before = cpu_jiffies()
    time.sleep(window_s)
    after = cpu_jiffies()
    if before is None or after is None:
        return None
    return (after[0] - before[0]) / _clock_ticks() / window_s


def sample_load() -> tuple:
    """(machine jiffies before, after, own jiffies spent, seconds) over one sleeping window."""
    before, own_before, t0 = cpu_jiffies(), _own_jiffies(), time.monotonic()
    time.sleep(LOAD_WINDOW_S)
    after, own_after, elapsed = cpu_jiffies(), _own_jiffies(), time.monotonic() - t0
    own = None if own_before is None or own_after is None else own_after - own_before
    return before, after, own, elapsed


def foreign_load(samples: list[tuple]) -> float | None:
    """Cores other processes kept busy: (machine busy − our ranks' CPU time) / window."""
    samples = [s for s in samples if s and s[0] and s[1]]
    if not samples:
        return None
    before, after, _, elapsed = samples[0]
    own_total = sum(s[2] or 0 for s in samples)
    busy = (after[0] - before[0]) - own_total
    return max(0.0, busy / _clock_ticks() / elapsed)
