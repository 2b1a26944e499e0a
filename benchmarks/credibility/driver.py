"""One launch of the credibility benchmark: every program at every size, in blocks.

Run by ``benchmarks/bench_credibility.py`` as
``mpiexec -bind-to core -n 2 python -m mpi4py driver.py --blocks B --seed S --lib bare.so --out F``.
In each block, every size is measured by every program once, in an order shuffled per
size (the same on both ranks), so each program's figure has neighbours from the other
programs taken seconds apart in the same launch — the pairs the checks compare:

* ``ours``: :class:`mpiworkbench.bench.harness.BenchRun` with backends ``mpi4py-buf`` and
  ``c``, exactly what ``mpiworkbench bench`` runs (one run per count group, stepped size by size);
* ``mpi4py.bench``: mpi4py's own ``pingpong`` function, its code unchanged, asked for one
  size per call; the two arrays it requests from ``numpy.empty`` are the block's buffers
  (``mpi4py.bench``), or NumPy's own written once (``NUMPY_BUFFERS``) or untouched, as
  shipped (``AS_SHIPPED``; the send buffer is then the zero page) — these two for context;
* ``bare C``: ``bare_loops.c`` (no mpiworkbench code), built as a library and called here;
* ``bare mpi4py``: the dozen-line loops below.

**Same memory.** In a block, at a size, every program (but the two context variants) sends
from and receives into the same two buffers, allocated afresh for that block and size by
the harness's rule (:meth:`mpiworkbench.bench.buffers.Buffers.for_size`: 4 KiB-aligned;
2 MiB-aligned + ``MADV_HUGEPAGE`` from 4 MiB, as NumPy advises; written once). On this VM an 8 MiB allocation itself draws faster or slower memory
(in one block: 273 and 275 us one-way for two programs with buffers of their own, 455 us
for our two backends sharing theirs); sharing the buffers keeps that draw out of the
comparison of the measurements, and blocks sample many allocations. Thread level single.
Rank 0 writes ``{"library_version", "samples": [{"block", "bench", "size", "who", "t_us"}, ...]}``
to ``--out``. The world must have the size the launcher asked for (a launcher of another MPI
implementation than the library's starts worlds of one rank each: refused).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import random
import sys
from pathlib import Path

import mpi4py

mpi4py.rc.thread_level = "single"

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402
from mpi4py import bench as mpi4py_bench  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import plan  # noqa: E402

from mpiworkbench.bench.buffers import Buffers  # noqa: E402
from mpiworkbench.bench.method import Policy  # noqa: E402
from mpiworkbench.bench.harness import BenchRun  # noqa: E402
from mpiworkbench.core import implementations  # noqa: E402
COMM = MPI.COMM_WORLD


# -- mpi4py.bench, its code unchanged: only what numpy.empty hands it is chosen here ------
_EMPTY = np.empty
_ALLOC: dict = {"mode": None, "shared": []}


def _empty_for_bench(shape, dtype=float, *args, **kwargs):
    mode = _ALLOC["mode"]
    if mode and dtype == "B" and not args and not kwargs and isinstance(shape, int):
        if mode == "shared":  # it asks for the send buffer, then the receive buffer
            array = _ALLOC["shared"].pop(0)
            assert array.nbytes == shape, (array.nbytes, shape)
            return array
        array = _EMPTY(shape, dtype)
        if mode == "numpy":
            array.fill(97)
        return array
    return _EMPTY(shape, dtype, *args, **kwargs)


np.empty = _empty_for_bench
_BENCH_MODES = {"mpi4py.bench": "shared", plan.NUMPY_BUFFERS: "numpy", plan.AS_SHIPPED: "shipped"}


def mpi4py_bench_pingpong(size: int, who: str, s: np.ndarray, r: np.ndarray) -> float:
    iters, skip = plan.counts(size)
    _ALLOC["mode"], _ALLOC["shared"] = _BENCH_MODES[who], [s, r]
    try:
        result = mpi4py_bench.pingpong(COMM, ["-q", "-m", str(size), "-n", str(size), "-l", str(iters),
                                              "-s", str(skip), "--large-size", str(1 << 40),
                                              "--huge-size", str(1 << 40)])
    finally:
        _ALLOC["mode"], _ALLOC["shared"] = None, []
    (nbytes, t_mean, _), = result
    assert nbytes == size, (nbytes, size)
    return t_mean * 1e6


# -- bare mpi4py loops ------------------------------------------------------------------
def bare_mpi4py(bench: str, n: int, s: np.ndarray, r: np.ndarray) -> float:
    iters, skip = plan.counts(n)
    wtime, barrier, send, recv, allreduce, SUM = MPI.Wtime, COMM.Barrier, COMM.Send, COMM.Recv, COMM.Allreduce, MPI.SUM
    if bench == "allreduce":  # OSU: each call timed, barrier after it; average across ranks
        x, y = s.view(np.float64), r.view(np.float64)
        total = 0.0
        barrier()
        for i in range(iters + skip):
            t = wtime()
            allreduce(x, y, SUM)
            if i >= skip:
                total += wtime() - t
            barrier()
        return COMM.allreduce(total * 1e6 / iters, op=MPI.SUM) / COMM.size
    peer, t0 = 1 - COMM.rank, 0.0  # OSU ping-pong: rank 0 times the loop, one-way = round trip / 2
    barrier()
    for i in range(iters + skip):
        if i == skip:
            t0 = wtime()
        if COMM.rank == 0:
            send(s, peer, 1); recv(r, peer, 1)
        else:
            recv(r, peer, 1); send(s, peer, 1)
    return (wtime() - t0) * 1e6 / (2 * iters)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--lib", required=True, help="bare_loops.c built as a shared library")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    assert MPI.Query_thread() == MPI.THREAD_SINGLE, MPI.Query_thread()
    version = MPI.Get_library_version().replace("\x00", "").strip()
    implementations.check_world_size(COMM.size, version)
    lib = ctypes.CDLL(args.lib)
    for fn in (lib.bare_pingpong_in, lib.bare_allreduce_in):
        fn.argtypes, fn.restype = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 2, ctypes.c_double
    bare_c = {"pingpong": lib.bare_pingpong_in, "allreduce": lib.bare_allreduce_in}
    rng = random.Random(args.seed)
    samples = []
    for block in range(args.blocks):
        for bench, sizes in (("pingpong", plan.PINGPONG_SIZES), ("allreduce", plan.ALLREDUCE_SIZES)):
            for grp in ("small", "large"):
                grp_sizes = [s for s in sizes if plan.group(s) == grp]
                iters, skip = plan.COUNTS[grp]
                ours = BenchRun(bench, plan.OURS, grp_sizes, Policy(iterations=iters, warmup=skip, time_cap_s=60.0),
                                comm=COMM, measure_load=False)
                for size in grp_sizes:
                    memory = Buffers.for_size(size)  # this block's memory at this size, for every program
                    s, r = memory.send, memory.recv
                    order = list(plan.PROGRAMS[bench])
                    rng.shuffle(order)  # same seed on every rank: the same order everywhere
                    for who in order:
                        if who == "ours":
                            ours.adopt_buffers(memory, size)
                            got = {row["backend"]: row["t_us"] for row in ours.step()}
                            assert ours.rows[-1]["size"] == size
                        elif who == "bare C":
                            got = {who: bare_c[bench](iters, skip, size, s.ctypes.data, r.ctypes.data)}
                        elif who == "bare mpi4py":
                            got = {who: bare_mpi4py(bench, size, s, r)}
                        else:
                            got = {who: mpi4py_bench_pingpong(size, who, s, r)}
                        samples += [{"block": block, "bench": bench, "size": size, "who": w, "t_us": t}
                                    for w, t in got.items()]
    if COMM.rank == 0:
        Path(args.out).write_text(json.dumps({"library_version": version, "samples": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
