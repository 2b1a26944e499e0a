"""Timed loops for a backend that only the backends registry knows (e.g. ``mpi4jax``).

Placeholder until the registry's interface is read: such backends are reported as not
supported with the reason, never faked.
"""

from __future__ import annotations

from mpiworkbench.bench.catalog import Benchmark


def make_loop(bench: Benchmark, backend: str, comm, policy):
    from mpiworkbench.bench.runner import NotSupported

    raise NotSupported(f"not supported by {backend}: the benchmark harness has no timed loop for it yet")
