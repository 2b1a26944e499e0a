"""The harness: one size of one benchmark on one backend → one tidy row; sweeps; sessions.

Every backend gets the same buffers, the same iteration/warm-up counts (agreed across
ranks), the same time cap and the same statistics; only the timed loop is the backend's
own. Buffers are allocated afresh for every message size and only as large as the
benchmark needs (:meth:`BenchRun.prepare`), so the number at a size does not depend on
the rest of the sweep; ``benchmarks/bench_credibility.py`` checks the result against
``mpi4py.bench`` and a bare C loop. Sizes run in the outer loop, the policy's repeats
inside it and backends innermost (interleaved), so a drift in background load hits every
backend alike, and each finished size can be written out or plotted at once.
"""

from __future__ import annotations

import statistics
import time
import uuid
from typing import Callable, Iterable, NamedTuple

from mpiworkbench.core import mpi
from mpiworkbench.core import environment
from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.catalog import Benchmark, get_benchmark, throughput_mbps
from mpiworkbench.bench.method import Policy, check_sizes
#: Backends that have timed loops of their own here (C in C, numba-mpi in @njit).
LOOP_BACKENDS = ("mpi4py-obj", "mpi4py-buf", "numba-mpi", "c")
#: Benchmarks whose buffers hold one block of the message size per rank; the others need
#: just the message (sizing them for every rank would put a 2 MiB ping-pong on huge pages
#: that a 2 MiB NumPy array does not get).
PER_RANK_BLOCKS = frozenset({"alltoall", "gather", "scatter", "allgather"})


class Sample(NamedTuple):
    """One timed loop of one size on one backend: counts, and every rank's seconds per unit
    (per one-way message for ping-pong, per iteration otherwise)."""

    iterations: int
    warmup: int
    rule_iterations: int
    per_rank: list[float]


class NotSupported(Exception):
    """A backend cannot run a benchmark; the message says why."""


def make_loop(bench: Benchmark, backend: str, comm, policy: Policy) -> Callable:
    """The backend's timed loop: ``loop(buffers, nbytes, iterations, warmup) -> seconds``."""
    if backend.startswith("api:") or backend not in LOOP_BACKENDS:
        from mpiworkbench.backends import api_loops
        return api_loops.make_loop(bench, backend, comm, policy)
    if backend == "c":
        from mpiworkbench.backends.c import loops as loops_c
        return loops_c.make_loop(bench, comm, policy.collective_mode, policy.window)
    if backend in ("mpi4py-buf", "mpi4py-obj"):
        from mpiworkbench.backends.mpi4py import loops as loops_python
        return loops_python.make_loop(bench, comm, backend.rsplit("-", 1)[1],
                                      policy.collective_mode, policy.window)
    if backend == "numba-mpi":
        from mpiworkbench.backends.numba_mpi import loops as loops_numba
        try:
            return loops_numba.make_loop(bench, comm, policy.collective_mode, policy.window)
        except loops_numba.NotSupported as exc:
            raise NotSupported(f"not supported by numba-mpi: {exc}") from None
    raise AssertionError(backend)


def known_backends() -> list[str]:
    """Backends a benchmark can run on: ours, any the backends registry adds, and
    ``api:<name>`` (the same backend timed through the unified interface)."""
    from mpiworkbench.backends import backend_names
    names = list(LOOP_BACKENDS)
    names += [n for n in backend_names() if n not in names]
    return names + [f"api:{n}" for n in backend_names()]


def unsupported_reason(bench: Benchmark, backend: str) -> str | None:
    """Why the backends registry says *backend* cannot run *bench* (None if it can)."""
    from mpiworkbench.backends import OPERATIONS, capabilities
    name = backend[4:] if backend.startswith("api:") else backend
    caps = capabilities([name])[name]
    if not caps["available"]:
        return caps["reason"]
    for op in bench.ops:
        if op in OPERATIONS and caps["ops"].get(op):
            return f"not supported by {name}: {op}: {caps['ops'][op]}"
    return None


def validate(bench_name: str, backends: Iterable[str], sizes: list[int], nprocs: int) -> tuple[Benchmark, list[str], list[int]]:
    """Check a request before any communication; raises ValueError naming the bad value."""
    bench = get_benchmark(bench_name)
    backends = [b.strip() for b in backends if b.strip()]
    if not backends:
        raise ValueError("no backend given; pass e.g. --backend mpi4py-buf,c")
    allowed = known_backends()
    for name in backends:
        if name not in allowed:
            raise ValueError(f"unknown backend {name!r}; choose from: {', '.join(allowed)}")
    if nprocs < bench.min_ranks:
        raise ValueError(
            f"{bench.name} needs at least {bench.min_ranks} ranks; got {nprocs}; "
            f"run with --np {bench.min_ranks} or more"
        )
    sizes = [0] if not bench.sized else check_sizes(sizes)
    small = [s for s in sizes if bench.sized and s < bench.min_size]
    if small:
        raise ValueError(
            f"{bench.name} reduces float64 values, so sizes must be at least {bench.min_size} B; "
            f"got {small[0]} B; start the sweep at {bench.min_size}"
        )
    return bench, backends, sizes


class BenchRun:
    """A sweep living on every rank: :meth:`step` measures the next size on every backend.

    Engine-side object for the notebook (``wb.create("mpiworkbench.bench.harness:BenchRun",
    ...)`` then one ``step`` per async call, redrawing in between); the CLI just loops.
    """

    def __init__(self, benchmark: str, backends: Iterable[str], sizes: list[int],
                 policy: Policy | dict | None = None, comm=None, measure_load: bool = True):
        self.comm = mpi.resolve_comm(comm)
        policy = Policy(**policy) if isinstance(policy, dict) else (policy or Policy())
        self.policy = policy
        self.bench, self.backends, self.sizes = mpi.checked(
            self.comm, lambda: validate(benchmark, list(backends), list(sizes), self.comm.Get_size())
        )
        self.run_id = self.comm.bcast(uuid.uuid4().hex[:12] if self.comm.Get_rank() == 0 else None)
        self.environment = environment.capture(self.comm, measure_load=measure_load)
        self.buffers: Buffers | None = None
        self.buffers_size: int | None = None
        self.loops: dict[str, Callable] = {}
        self.skipped: dict[str, str] = {}
        for name in self.backends:
            why = unsupported_reason(self.bench, name)
            if why is not None:
                self.skipped[name] = why
                continue
            try:
                loop = make_loop(self.bench, name, self.comm, policy)
                # one-off costs out of every timed region: build/JIT, connection set-up
                first = max(self.sizes[0], self.bench.min_size if self.bench.sized else 0)
                loop(self.prepare(first), first, 1, 1)
                self.loops[name] = loop
            except NotSupported as exc:
                self.skipped[name] = str(exc)
        self.next_index = 0
        self.rows: list[dict] = []

    @property
    def done(self) -> bool:
        return self.next_index >= len(self.sizes)

    def step(self) -> list[dict]:
        """Measure the next size on every backend; return its rows (empty when done)."""
        if self.done:
            return []
        size = self.sizes[self.next_index]
        samples: dict[str, list[Sample]] = {name: [] for name in self.loops}
        for _ in range(self.policy.repeats):  # repeats interleaved over backends, like sizes
            for name in self.loops:
                samples[name].append(self._time(name, size))
        rows = [self._row(name, size, samples[name]) for name in self.loops]
        self.next_index += 1
        self.rows.extend(rows)
        return rows

    def run(self, on_rows: Callable[[list[dict]], None] | None = None) -> list[dict]:
        while not self.done:
            rows = self.step()
            if on_rows is not None:
                on_rows(rows)
        return self.rows

    def prepare(self, size: int) -> Buffers:
        """The buffers for messages of *size* bytes: kept while the sweep stays at *size*,
        allocated afresh (see :mod:`~mpiworkbench.bench.buffers`) when it moves on, so a
        size's result does not depend on the largest size of the sweep."""
        size = max(8, int(size))
        if self.buffers is None or self.buffers_size != size:
            self.buffers = None  # release the previous size's memory first
            blocks = self.comm.Get_size() if self.bench.name in PER_RANK_BLOCKS else 1
            self.buffers = Buffers.for_size(size, blocks)
            self.buffers_size = size
        return self.buffers

    def adopt_buffers(self, buffers: Buffers, size: int) -> None:
        """Time *size* in *buffers* (allocated by the caller) instead of fresh ones: for a
        comparison of programs on the very same memory (``benchmarks/bench_credibility.py``;
        at 8 MiB an allocation itself draws faster or slower memory on a VM)."""
        blocks = self.comm.Get_size() if self.bench.name in PER_RANK_BLOCKS else 1
        if buffers.send.nbytes < max(8, size) * blocks or buffers.recv.nbytes < max(8, size) * blocks:
            raise ValueError(f"buffers of {buffers.send.nbytes} B are too small for {size} B x {blocks}")
        self.buffers, self.buffers_size = buffers, max(8, int(size))

    def measure(self, backend: str, size: int) -> dict:
        """Collective: time *size* on *backend* once; every rank returns the same row."""
        return self._row(backend, size, [self._time(backend, size)])

    def _time(self, backend: str, size: int) -> "Sample":
        """Collective: one timed loop of *size* on *backend*; every rank's seconds per unit."""
        comm, bench, policy, loop = self.comm, self.bench, self.policy, self.loops[backend]
        iters, warmup = policy.counts(bench.kind, size)
        buffers = self.prepare(size)
        # probe (also a warm-up): estimate one iteration, agree on the capped count
        probe = max(1, min(warmup, 10))
        seconds = loop(buffers, size, probe, 0)
        estimate = comm.allreduce(seconds / probe, op=mpi.MPI().MAX)
        capped_iters = policy.capped(iters, estimate)
        if capped_iters < iters:
            warmup = max(1, min(warmup, capped_iters // 10))
        seconds = loop(buffers, size, capped_iters, warmup)
        units = 2 * capped_iters if bench.name == "pingpong" else capped_iters
        return Sample(capped_iters, warmup, iters, comm.allgather(seconds / units))

    def _row(self, backend: str, size: int, samples: list["Sample"]) -> dict:
        """The row of *size* on *backend* from one or more repeats (medians across repeats)."""
        bench, nprocs = self.bench, self.comm.Get_size()
        pt2pt = bench.name in ("pingpong", "bw", "bibw")
        primary, t_avg, t_min, t_max, through = [], [], [], [], []
        for sample in samples:
            taking_part = sample.per_rank[:2] if pt2pt else sample.per_rank
            t_avg.append(sum(taking_part) / len(taking_part))
            t_min.append(min(taking_part))
            t_max.append(max(taking_part))
            primary.append(sample.per_rank[0] if pt2pt else t_avg[-1])
            through.append(primary[-1] if pt2pt else t_max[-1])
        median = statistics.median
        mbps = throughput_mbps(bench, size, median(through), nprocs, self.policy.window)
        if bench.name == "pingpong":
            mode = "one-way = rank 0 round trip / 2, block timing"
        elif bench.kind == "bandwidth":
            mode = f"window {self.policy.window}, rank 0 block timing, per window iteration"
        elif bench.name == "sendrecv":
            mode = "block timing per Sendrecv"
        else:
            mode = self.policy.collective_mode
        iters = min(s.iterations for s in samples)
        return {
            "run_id": self.run_id,
            "benchmark": bench.name,
            "backend": backend,
            "size": size,
            "nprocs": nprocs,
            "iterations": iters,
            "warmup": min(s.warmup for s in samples),
            "capped": iters < samples[0].rule_iterations,
            "mode": mode,
            "thread_level": self.environment["thread_level"],
            "repeats": len(samples),
            "t_us": median(primary) * 1e6,
            "t_avg_us": median(t_avg) * 1e6,
            "t_min_us": median(t_min) * 1e6,
            "t_max_us": median(t_max) * 1e6,
            "t_us_repeats": [t * 1e6 for t in primary],
            "throughput_MBps": mbps,
            "throughput_def": bench.throughput,
            "flagged": bool(self.environment["warnings"]),
            "time": time.strftime("%H:%M:%S"),
        }

    def summary(self) -> dict:
        """Everything a results file holds (see :mod:`mpiworkbench.bench.results`)."""
        from mpiworkbench.bench import results
        return results.document(self)
