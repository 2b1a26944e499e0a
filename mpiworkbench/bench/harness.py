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

from mpiworkbench.backends import BackendUnavailableError, Loop, NotSupportedError, bench_names, timed_loop
from mpiworkbench.bench import results
from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.catalog import throughput_mbps, timed_units, unsupported_reason, validate
from mpiworkbench.bench.method import Policy
from mpiworkbench.core import machine, mpi

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


class BenchRun:
    """A sweep living on every rank: :meth:`step` measures the next size on every backend.

    Engine-side object for the notebook (``wb.create("mpiworkbench.bench.harness:BenchRun",
    ...)`` then one ``step`` per async call, redrawing in between); the CLI just loops.
    Collective: every rank of *comm* builds it with the same arguments.

    Parameters
    ----------
    benchmark : str
        A name of :data:`mpiworkbench.bench.catalog.BENCHMARKS`.
    backends : iterable of str
        Backend names (:func:`mpiworkbench.backends.bench_names`), in the order they are
        timed within every round.
    sizes : list of int
        Message sizes in bytes (ignored by benchmarks without a size).
    policy : Policy or dict, optional
        Iteration rule, time cap, collective mode, window, repeats (default ``Policy()``).
    comm : mpi4py.MPI.Comm, optional
        The communicator (``None``: ``COMM_WORLD``).
    measure_load : bool
        Sample the machine's background load for the environment record.

    Raises
    ------
    ValueError
        On every rank, for a bad benchmark, backend, size or rank count.

    Notes
    -----
    A backend that cannot run here is left out and named in :attr:`skipped` with the
    reason; every other backend's loop is built and run once (compile, connect) before
    anything is timed.
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
        self.environment = machine.capture(self.comm, measure_load=measure_load)
        self.buffers: Buffers | None = None
        self.buffers_size: int | None = None
        self.loops: dict[str, Loop] = {}
        self.skipped: dict[str, str] = {}
        for name in self.backends:
            why = unsupported_reason(self.bench, name)
            if why is not None:
                self.skipped[name] = why
                continue
            try:
                loop = timed_loop(name, self.bench.name, self.comm, policy.collective_mode, policy.window)
                # one-off costs out of every timed region: build/JIT, connection set-up
                first = max(self.sizes[0], self.bench.min_size if self.bench.sized else 0)
                loop(self.prepare(first), first, 1, 1)
                self.loops[name] = loop
            except (NotSupportedError, BackendUnavailableError) as exc:
                self.skipped[name] = str(exc)
        if not self.loops:
            raise ValueError(self._none_can_run())
        self.next_index = 0
        self.rows: list[dict] = []

    def _none_can_run(self) -> str:
        """Collective: why no backend asked for can run the benchmark, and which can — those the
        registry does not rule out whose loop builds here (every rank tries the same ones in
        the same order, so a loop that talks while it is built talks to its peers)."""
        can = []
        for name in bench_names():
            if name in self.skipped or unsupported_reason(self.bench, name) is not None:
                continue
            try:
                timed_loop(name, self.bench.name, self.comm, self.policy.collective_mode, self.policy.window)
            except (NotSupportedError, BackendUnavailableError):
                continue
            can.append(name)
        return (f"none of the backends asked for can run {self.bench.name} here: "
                + "; ".join(f"{name}: {why}" for name, why in self.skipped.items())
                + (f". These can: --backend {','.join(can)}" if can else f". No backend can run {self.bench.name} here"))

    @property
    def done(self) -> bool:
        """Whether every size has been measured."""
        return self.next_index >= len(self.sizes)

    def step(self) -> list[dict]:
        """Collective: measure the next size on every backend, repeats interleaved.

        Returns
        -------
        list of dict
            The size's rows, one per backend, identical on every rank (empty when done).
        """
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
        """Collective: measure every remaining size.

        Parameters
        ----------
        on_rows : callable, optional
            Called with each size's rows as soon as they are measured.

        Returns
        -------
        list of dict
            Every row of the sweep so far.
        """
        while not self.done:
            rows = self.step()
            if on_rows is not None:
                on_rows(rows)
        return self.rows

    def prepare(self, size: int) -> Buffers:
        """The buffers for messages of *size* bytes.

        Kept while the sweep stays at *size*, allocated afresh (see
        :mod:`~mpiworkbench.bench.buffers`) when it moves on, so a size's result does not
        depend on the largest size of the sweep.

        Parameters
        ----------
        size : int
            Message size in bytes (at least 8 B are allocated).

        Returns
        -------
        Buffers
            One block per rank for the benchmarks of :data:`PER_RANK_BLOCKS`, else one.
        """
        size = max(8, int(size))
        if self.buffers is None or self.buffers_size != size:
            self.buffers = None  # release the previous size's memory first
            self.buffers = Buffers.for_size(size, self._blocks())
            self.buffers_size = size
        return self.buffers

    def adopt_buffers(self, buffers: Buffers, size: int) -> None:
        """Time *size* in *buffers* (allocated by the caller) instead of fresh ones.

        For a comparison of programs on the very same memory
        (``benchmarks/bench_credibility.py``; at 8 MiB an allocation itself draws faster or
        slower memory on a VM: docs/measurements.md, Micro-benchmarks).

        Parameters
        ----------
        buffers : Buffers
            At least as large as :meth:`prepare` would allocate for *size*.
        size : int
            Message size in bytes.

        Raises
        ------
        ValueError
            When *buffers* are too small.
        """
        blocks = self._blocks()
        if buffers.send.nbytes < max(8, size) * blocks or buffers.recv.nbytes < max(8, size) * blocks:
            raise ValueError(f"buffers of {buffers.send.nbytes} B are too small for {size} B x {blocks}")
        self.buffers, self.buffers_size = buffers, max(8, int(size))

    def _blocks(self) -> int:
        return self.comm.Get_size() if self.bench.name in PER_RANK_BLOCKS else 1

    def measure(self, backend: str, size: int) -> dict:
        """Collective: time *size* on *backend* once (outside the sweep).

        Parameters
        ----------
        backend : str
            One of the backends this run built a loop for (a key of :attr:`loops`).
        size : int
            Message size in bytes.

        Returns
        -------
        dict
            The row, identical on every rank (not added to :attr:`rows`).
        """
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
        units = timed_units(bench, capped_iters, comm.Get_size())
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
        elif bench.name == "ring":
            mode = "block timing per hop (ring round / ranks), persistent requests"
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
            "mpi": self.environment["mpi"],
        }

    def summary(self) -> dict:
        """Everything a results file holds (see :mod:`mpiworkbench.bench.results`).

        Returns
        -------
        dict
            The results document: benchmark, run id, method, environment, rows, skipped
            backends, fits.
        """
        return results.document(self)
