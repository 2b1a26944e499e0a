"""One notebook's worth of MPI work on a shared cluster, as a process of its own: what
``tests/cluster/test_shared_world.py`` runs three of at once against one ``ipcluster``.

    python -m tests.cluster.shared_client ROLE SEED CALLS

attaches to the running ``mpi`` profile's cluster (``$IPYTHONDIR``), runs *CALLS* random
collectives with random pauses and checks every result; role ``play`` also plays a wave panel
for frames between them (on a thread, as Play does) and ``bench`` runs a benchmark sweep
first. Prints one JSON line with what it did; exits non-zero on any wrong result.

Role ``block`` leaves rank 0 blocked in a ``Recv`` nobody matches (its call times out), prints
what it saw, then waits for a line on stdin before calling again (after someone else
restarted the world) and prints what that call said.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time

import ipyparallel as ipp

from mpiworkbench import Workbench


@ipp.interactive
def collective(kind: str, x: int):
    """One collective on every rank; its result is checked by :func:`expected`."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    if kind == "allreduce":
        return comm.allreduce(x + rank)
    if kind == "bcast":
        return comm.bcast(x if rank == 0 else None, root=0)
    if kind == "reduce":
        return comm.reduce(x * (rank + 1), root=size - 1)
    if kind == "allgather":
        return comm.allgather(x - rank)
    if kind == "alltoall":
        return comm.alltoall([x + 10 * rank + peer for peer in range(size)])
    if kind == "scatter":
        return comm.scatter([x + r for r in range(size)] if rank == 0 else None, root=0)
    if kind == "barrier":
        comm.Barrier()
        return rank
    raise ValueError(kind)


KINDS = ("allreduce", "bcast", "reduce", "allgather", "alltoall", "scatter", "barrier")


def expected(kind: str, x: int, n: int) -> list:
    if kind == "allreduce":
        return [n * x + n * (n - 1) // 2] * n
    if kind == "bcast":
        return [x] * n
    if kind == "reduce":
        return [None] * (n - 1) + [x * n * (n + 1) // 2]
    if kind == "allgather":
        return [[x - r for r in range(n)]] * n
    if kind == "alltoall":
        return [[x + 10 * r + me for r in range(n)] for me in range(n)]
    if kind == "scatter":
        return [x + r for r in range(n)]
    return list(range(n))


@ipp.interactive
def receive_nothing():
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        comm.recv(source=comm.size - 1, tag=4242)


def block() -> int:
    from mpiworkbench.client.errors import ExecutionTimeout, WorldRestarted

    wb = Workbench.attach(profile="mpi", activate=False, timeout=3)
    seen = {"role": "block"}
    try:
        try:
            wb.run(receive_nothing)
        except ExecutionTimeout as exc:
            seen["timeout"] = str(exc)
        seen["state"] = wb.state
        print(json.dumps(seen), flush=True)
        sys.stdin.readline()  # the test restarts the world from elsewhere meanwhile
        wb.timeout = 120
        after = {"role": "block"}
        try:
            wb.run(collective, "allreduce", 1)
        except WorldRestarted as exc:
            after["told"] = str(exc)
        after["again"] = wb.run(collective, "allreduce", 1)
        after["state"] = wb.state
        print(json.dumps(after), flush=True)
    finally:
        wb.stop()
    return 0


def main(role: str, seed: int, calls: int) -> int:
    rng = random.Random(seed)
    t0 = time.perf_counter()
    wb = Workbench.attach(profile="mpi", activate=False, timeout=float(os.environ.get("SHARED_CLIENT_TIMEOUT", "300")))
    report = {"role": role, "seed": seed, "attach_s": round(time.perf_counter() - t0, 2), "n": wb.n, "wrong": []}
    try:
        if role == "bench":
            from mpiworkbench.drivers import bench

            with wb.doing("bench sweep"):
                document = bench.run_on_workbench(wb, "allreduce", backends=("mpi4py-buf", "c"), sizes="8:4K")
            report["bench_rows"] = len(document["rows"])
        frames: list[int] = []
        player = None
        if role == "play":
            w = wb.wave(mesh=17)
            panel = w.panel(w)
            player = threading.Thread(target=lambda: frames.append(panel.play_frames(lambda: False, max_frames=40)))
            player.start()
        for i in range(calls):
            kind, x = rng.choice(KINDS), rng.randrange(1000)
            got = wb.run(collective, kind, x)
            if got != expected(kind, x, wb.n):
                report["wrong"].append([i, kind, x, got])
            if rng.random() < 0.2:
                time.sleep(rng.random() * 0.02)
        if player is not None:
            player.join(600)
            report["frames"] = frames[0] if frames else None
            report["wave_steps"] = w.steps
            report["wave_error"] = float(w.error())
            w.close()
        report["calls"] = calls
    finally:
        wb.stop()
    report["seconds"] = round(time.perf_counter() - t0, 2)
    print(json.dumps(report), flush=True)
    return 1 if report["wrong"] else 0


if __name__ == "__main__":
    sys.exit(block() if sys.argv[1] == "block" else main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
