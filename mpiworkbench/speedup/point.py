"""Engine-side: time one speedup point on a sub-communicator of the running world.

:func:`run_point` is collective over *comm* (the whole world: the ranks of an
ipyparallel cluster, or of the CLI's ``mpiexec``). The first ``nranks`` ranks of the point's
placement (:func:`~mpiworkbench.core.machine.rank_order`: one node filled first, or spread
over the nodes; on one host ranks ``0 … nranks-1`` either way) split off a
sub-communicator, build the experiment's kernel on it (outside the timed region), run
the warm-up and then the timed repetitions; each repetition starts after a barrier and
its time is the slowest rank's. Ranks outside the point wait *asleep* (``Ibarrier`` +
``Test`` + short sleeps) instead of busy-polling inside MPI, so they do not steal the
cores of the ranks being measured, and the timed region runs with one BLAS thread per
rank (see :mod:`~mpiworkbench.speedup.blas_threads`). The same function serves the panel (through
``wb.run``) and the CLI (under ``mpiexec``).

A point with ``"trace": True`` then runs its timed work once more, untimed, with the MPI
interposer recording on the sub-communicator (:func:`_traced_run`); its record gets the POP
factors of that run (``pop``, :func:`mpiworkbench.trace.efficiency.efficiency`) and, on
rank 0 only, the :class:`~mpiworkbench.trace.model.Trace` itself (``gathered_trace``: the
result keeps it out of its JSON, in ``SpeedupResult.traces``).
"""

from __future__ import annotations

import math
import socket
from typing import Any

import numpy as np

from mpiworkbench.core import mpi, objects
from mpiworkbench.core.machine import PLACEMENTS, check_placement, load_average, mpi_library, placement, rank_order
from mpiworkbench.speedup import experiments
from mpiworkbench.speedup.analysis import TRACE_KEY
from mpiworkbench.speedup.blas_threads import limit_blas_threads
from mpiworkbench.trace import recorder
from mpiworkbench.trace.efficiency import efficiency
from mpiworkbench.trace.events import KIND, kind_name

__all__ = ["IDLE_POLL_S", "TRACE_KEY", "placement", "run_point"]

#: Sleep between tests of the idle ranks' Ibarrier (seconds): short against any point.
IDLE_POLL_S = 0.002


def _time_kernel(sub, kernel, repeats: int, warmup: int) -> tuple[list[float], dict[str, list[float]] | None]:
    """The repetitions' times (slowest rank's, on every rank) and, on rank 0 of *sub*, the
    max/min/average of the per-rank times reduced with ``MPI_Reduce`` as report 003 does."""
    MPI = mpi.MPI()
    for _ in range(warmup):
        kernel.run()
    times = []
    own = []
    prepare = getattr(kernel, "prepare", None)
    for _ in range(repeats):
        if prepare is not None:  # e.g. a fresh solver: set-up stays out of the timed region
            prepare()
        sub.Barrier()
        t0 = MPI.Wtime()
        kernel.run()
        elapsed = MPI.Wtime() - t0
        own.append(elapsed)
        times.append(sub.allreduce(elapsed, op=MPI.MAX))
    mine = np.array(own)
    low, total = np.empty_like(mine), np.empty_like(mine)
    sub.Reduce(mine, low, op=MPI.MIN, root=0)
    sub.Reduce(mine, total, op=MPI.SUM, root=0)
    per_rank = None
    if sub.rank == 0:
        per_rank = {"max": list(times), "min": low.tolist(), "avg": (total / sub.size).tolist()}
    return times, per_rank


def _traced_run(sub, world_rank: int, kernel):
    """Collective over *sub*: one more run of the kernel (after its ``prepare()``) with every
    MPI call recorded; the Trace on rank 0 of *sub* (``None`` elsewhere), its ranks those of
    *sub*. As a timed repetition, the run starts after a barrier: recording starts before it
    (each rank's trace buffer is set up in its own time) and the trace begins when the last
    rank has left it."""
    prepare = getattr(kernel, "prepare", None)
    if prepare is not None:
        prepare()

    def run():
        sub.Barrier()
        kernel.run()

    _, trace = recorder.trace_call(sub, run)
    members = sub.gather(world_rank, root=0)
    if trace is None:
        return None
    first = [trace.of_rank(r)[0] for r in range(trace.nranks)]
    if any(int(e["kind"]) != KIND["MPI_Barrier"] for e in first):
        raise RuntimeError("a traced speedup point's first recorded call is not its barrier: "
                           f"got {[kind_name(int(e['kind'])) for e in first]}")
    trace = trace.window(max(float(e["t1"]) for e in first), math.inf)
    if members != list(range(sub.size)):
        _peers_on(trace, members)
    return trace


def _peers_on(trace, members: list[int]) -> None:
    """Peers are recorded as world ranks (the interposer's), the trace's ranks are *sub*'s: when
    the point's ranks are not world ranks 0 … n-1 (spread over nodes), renumber the peers."""
    own = np.full(max(members) + 1, -1, dtype=np.int32)
    own[members] = np.arange(len(members))
    for name in ("peer", "peer2"):
        column = trace.events[name]
        known = (column >= 0) & (column < len(own))
        column[known] = own[column[known]]


def check_world_bound(point: dict[str, Any], world_size: int) -> None:
    """A point on a backend bound to ``MPI_COMM_WORLD`` needs all of the world (numba-mpi)."""
    backend = point.get("backend")
    if backend in experiments.WORLD_BOUND_BACKENDS and int(point["nranks"]) != world_size:
        raise ValueError(
            f"backend {backend!r} talks only on MPI_COMM_WORLD, so its points need a world of exactly "
            f"their rank count: this point has {point['nranks']} of the {world_size} running rank(s). "
            "Measure it with `mpiworkbench speedup … --backend` (one mpiexec per rank count), or on a "
            f"cluster of {point['nranks']} engine(s)"
        )


def run_point(point: dict[str, Any], comm=None) -> dict[str, Any]:
    """Collective over *comm*: time one point and return its record on every rank.

    *point* holds ``experiment``, ``variant``, ``nranks``, ``size``, ``repeats``,
    ``warmup`` and ``params`` (see :func:`mpiworkbench.speedup.plan.plan_points`).
    The record adds ``times`` (seconds, one per repetition, slowest rank),
    ``rank_times`` (per repetition, the max/min/average over the ranks of each rank's own
time, reduced to rank 0 with ``MPI_Reduce``), ``flops`` (when the kernel counts its
work), ``verify`` (the kernel's check on rank 0), the ``placement``, ``oversubscribed`` and
    the host's ``load_average`` just before the point (a busy machine inflates times) and
    ``mpi``, the MPI implementation the ranks run under (:mod:`mpiworkbench.core.implementations`).
    With ``point["trace"]`` also ``pop`` (the traced run's POP factors) and, on rank 0 only,
    ``gathered_trace`` (its :class:`~mpiworkbench.trace.model.Trace`).
    """
    comm = mpi.resolve_comm(comm)
    MPI = mpi.MPI()
    nranks = int(point["nranks"])

    def validate():
        experiments.get(point["experiment"])
        if not 1 <= nranks <= comm.size:
            raise ValueError(
                f"a point needs between 1 and {comm.size} ranks (the size of the running world); "
                f"got {nranks} — start the cluster with more engines or drop that rank count"
            )
        check_world_bound(point, comm.size)
        check_placement(point.get("place", PLACEMENTS[0]))

    mpi.checked(comm, validate)
    experiment = experiments.get(point["experiment"])
    averages = load_average()  # 1-minute load: other users' processes compete for the cores
    load_before = None if averages is None else averages[0]
    # which ranks take part: the first nranks of the point's placement (rank 0 always does)
    order = rank_order(comm.allgather(socket.gethostname()), point.get("place", PLACEMENTS[0]))
    position = order.index(comm.rank)
    active = position < nranks
    sub = comm.Split(0 if active else MPI.UNDEFINED, position)
    record: dict[str, Any] | None = None
    trace = None
    error: BaseException | None = None
    if active:
        kernel = None
        try:
            factory = objects.resolve(experiment.factory)
            kernel = mpi.checked(
                sub, lambda: factory(sub, int(point["size"]), point["variant"], **dict(point.get("params", {})))
            )
            with limit_blas_threads(1) as blas_before:
                times, per_rank = _time_kernel(sub, kernel, int(point["repeats"]), int(point.get("warmup", 1)))
                if point.get("trace"):
                    trace = _traced_run(sub, comm.rank, kernel)
            check = kernel.verify()
            record = {**point, "times": times, "rank_times": per_rank, "verify": check,
                      "blas_threads": {"timed": 1, "default": blas_before}}
            flops = getattr(kernel, "flops", None)
            if flops is not None:  # work of one repetition: the analysis derives FLOP/s
                record["flops"] = int(flops)
            if trace is not None:  # rank 0 of sub: the one whose record is broadcast
                record["pop"] = {**efficiency(trace).to_dict(), "dropped": int(sum(trace.dropped))}
        except Exception as exc:  # noqa: BLE001 - raised on every world rank below
            error = exc
        finally:
            if kernel is not None:
                kernel.close()
            sub.Free()
    mpi.meet_asleep(comm, IDLE_POLL_S)
    mpi.raise_on_all_ranks(comm, error)
    where = placement(comm, active)
    record = comm.bcast(record, root=0)
    record["placement"] = where
    record["oversubscribed"] = where["oversubscribed"]
    record["load_average"] = comm.bcast(load_before, root=0)
    record["mpi"] = mpi_library()["mpi"]
    if trace is not None:  # rank 0's alone: not broadcast, and kept out of the result's JSON
        record[TRACE_KEY] = trace
    return record

