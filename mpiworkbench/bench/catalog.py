"""The registered micro-benchmarks: what each measures, how its time becomes a throughput.

Every benchmark runs through the same harness (:mod:`mpiworkbench.bench.harness`) on
every backend; a benchmark is data, and each backend owns its timed loops
(:meth:`mpiworkbench.backends.Backend.make_loop`, found by name). :func:`validate` checks
a request against this catalog and the backends registry before any communication.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from mpiworkbench.backends import API_PREFIX, OPERATIONS, bench_names, capabilities
from mpiworkbench.bench.method import check_sizes


@dataclass(frozen=True)
class Benchmark:
    """One registered micro-benchmark.

    ``kind`` picks the OSU iteration rule; ``unit_per_iteration`` is how many timed
    units one iteration holds (2 one-way messages for a ping-pong, a window of messages
    for ``bw``); ``throughput`` names the formula turning the time into MB/s.
    """

    name: str
    kind: str  # "latency" | "bandwidth" | "collective"
    title: str
    min_ranks: int
    ops: tuple[str, ...]  # backend-layer operations the loop uses
    throughput: str  # formula label, see throughput_mbps
    sized: bool = True  # False: the message size does not apply (barrier)
    min_size: int = 1
    source: str = ""


BENCHMARKS: dict[str, Benchmark] = {}


def register(bench: Benchmark) -> Benchmark:
    BENCHMARKS[bench.name] = bench
    return bench


for _b in (
    Benchmark("pingpong", "latency", "ping-pong one-way latency and ping-pong bandwidth", 2,
              ("send", "recv"), "S/t (= 2S/round trip)",
              source="thesis §5.1 eq. 5.1; OSU osu_latency; paper 001 Fig. 1"),
    Benchmark("bw", "bandwidth", "streaming bandwidth, OSU window definition", 2,
              ("isend", "irecv", "waitall", "send", "recv"), "S·window/t (OSU osu_bw)",
              source="OSU osu_bw"),
    Benchmark("bibw", "bandwidth", "bi-directional bandwidth, OSU window definition", 2,
              ("isend", "irecv", "waitall"), "2·S·window/t (OSU osu_bibw)",
              source="OSU osu_bibw"),
    Benchmark("sendrecv", "latency", "bidirectional Sendrecv on a periodic ring", 1,
              ("sendrecv",), "2S/t",
              source="paper 001 Figs. 3-4; report 003 §3 ring"),
    Benchmark("bcast", "collective", "broadcast (library)", 1, ("bcast",), "S/t_max",
              source="thesis Fig. 5.1; report 003 Fig. 2 (MPI_Bcast)"),
    Benchmark("reduce", "collective", "reduce of float64 (SUM)", 1, ("reduce",), "S/t_max",
              min_size=8, source="thesis Fig. 5.2"),
    Benchmark("allreduce", "collective", "allreduce of float64 (SUM)", 1, ("allreduce",), "S/t_max",
              min_size=8, source="thesis Fig. 5.3; numba-mpi paper 004 §2.2"),
    Benchmark("alltoall", "collective", "all-to-all, S bytes per pair", 1, ("alltoall",),
              "2(N-1)S/t_max", source="paper 001 Figs. 5-6"),
    Benchmark("gather", "collective", "gather to rank 0, S bytes per rank", 1, ("gather",), "S/t_max"),
    Benchmark("scatter", "collective", "scatter from rank 0, S bytes per rank", 1, ("scatter",), "S/t_max"),
    Benchmark("allgather", "collective", "allgather, S bytes per rank", 1, ("allgather",), "S/t_max"),
    Benchmark("barrier", "collective", "barrier", 1, ("barrier",), "none", sized=False),
    Benchmark("bcast_linear", "collective", "broadcast by hand: root Isends to all, Waitall", 1,
              ("isend", "recv", "waitall"), "S/t_max", source="report 003 §3 'simple version'"),
    Benchmark("bcast_binomial", "collective", "broadcast by hand: binomial-tree cascade", 1,
              ("send", "recv"), "S/t_max", source="report 003 §3 'cascade version'"),
    Benchmark("ring", "latency", "ring of persistent requests: Send_init/Recv_init once, then Start + Wait "
              "(rank 0 sends first, the others receive first); time per hop", 2,
              ("send", "recv"), "S/t (t: one hop = one ring round / ranks)",
              source="report 003 §2, Table 2 (latency: 1 B; bandwidth: 100 MB)"),
):
    register(_b)


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(
            f"unknown benchmark {name!r}; choose one of: {', '.join(BENCHMARKS)}"
        ) from None


def timed_units(bench: Benchmark, iterations: int, nprocs: int) -> int:
    """How many timed units *iterations* of *bench*'s loop hold: one-way messages for a
    ping-pong (2 per iteration), hops for the ring (one per rank and round), else calls."""
    if bench.name == "pingpong":
        return 2 * iterations
    if bench.name == "ring":
        return nprocs * iterations
    return iterations


def throughput_mbps(bench: Benchmark, size: int, seconds: float, nprocs: int, window: int) -> float | None:
    """MB/s (10^6 B/s) from the time of one timed unit, by the benchmark's definition.

    *seconds* is the one-way latency (ping-pong), the time of one window iteration
    (bw/bibw), or the per-call time (sendrecv and collectives; use t_max across ranks).
    """
    if not bench.sized or seconds <= 0:
        return None
    if bench.name == "pingpong":
        value = size / seconds
    elif bench.name == "bw":
        value = size * window / seconds
    elif bench.name == "bibw":
        value = 2 * size * window / seconds
    elif bench.name == "sendrecv":
        value = 2 * size / seconds
    elif bench.name == "alltoall":
        value = 2 * (nprocs - 1) * size / seconds
    else:
        value = size / seconds
    return value / 1e6


def unsupported_reason(bench: Benchmark, backend: str) -> str | None:
    """Why the backends registry says *backend* cannot run *bench* (None if it can)."""
    name = backend[len(API_PREFIX):] if backend.startswith(API_PREFIX) else backend
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
    allowed = bench_names()
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
