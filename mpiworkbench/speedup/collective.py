"""Speedup kernel: a micro-benchmark's timed loop on 1 … n ranks.

Uses the backends' timed loops (:func:`mpiworkbench.backends.timed_loop`, the same code
``mpiworkbench bench`` runs)
in back-to-back "block" mode. For a collective the "speedup" is below one: the curve
shows how the cost of one call grows with the number of ranks, which is exactly what
limits the inner product and CG curves at many ranks.
"""

from __future__ import annotations

from mpiworkbench.backends import implemented_names, timed_loop
from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.catalog import get_benchmark

BACKENDS = tuple(implemented_names(any_communicator=True))


class CollectiveLoop:
    def __init__(self, comm, nbytes: int, benchmark: str, iterations: int, backend: str):
        self.bench = get_benchmark(benchmark)
        if comm.size < self.bench.min_ranks:
            raise ValueError(
                f"{benchmark} needs at least {self.bench.min_ranks} ranks; got {comm.size} — "
                f"start the rank counts at {self.bench.min_ranks}"
            )
        self.nbytes = int(nbytes) if self.bench.sized else 0
        self.iterations = int(iterations)
        self.buffers = Buffers.allocate(max(self.nbytes, 8), comm.size)
        self.loop = timed_loop(backend, self.bench.name, comm, mode="block")
        self.loop(self.buffers, self.nbytes, 1, 1)  # JIT/connection set-up out of the timed region
        self.seconds = 0.0

    def run(self) -> None:
        self.seconds = self.loop(self.buffers, self.nbytes, self.iterations, 0)

    def verify(self) -> dict:
        return {"seconds_per_call": self.seconds / self.iterations, "ok": self.seconds > 0}

    def close(self) -> None:
        self.buffers = None


def make_kernel(comm, size: int, variant: str, iterations: int = 200, backend: str = "mpi4py-buf") -> CollectiveLoop:
    """Registry factory: *variant* is the benchmark name (allreduce, bcast, …)."""
    if backend not in BACKENDS:
        raise ValueError(f"bench backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1; got {iterations}")
    return CollectiveLoop(comm, size, variant, iterations, backend)
