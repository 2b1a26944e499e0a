"""Is the harness credible? Our numbers next to independent references, in one job.

Runs, interleaved over ``--rounds`` rounds (shuffled order each round, all at MPI thread
level *single*, ``mpiexec -bind-to core -n 2``; before every launch it waits, up to
``--patience`` s, until fewer than ``--quiet-limit`` cores are busy, and records the load):

* ``mpiworkbench bench pingpong --backend mpi4py-buf,c`` and ``… allreduce …`` (our harness);
* ``mpi4py.bench pingpong`` (mpi4py's own benchmark, independent code), its code run
  unchanged by a small driver that hands it buffers allocated like ours (see below);
* a bare C program (written here, compiled with the venv's mpicc; no mpiworkbench code):
  OSU-style ping-pong and allreduce;
* bare mpi4py loops (a dozen lines, below): the allreduce reference for ``mpi4py-buf``, and
  an OSU block-timed ping-pong shown for context (not one of the 25 checks).

Every comparison measures the same quantity the same way; where the two sides differed,
this is what was found and which side was changed:

* **Buffers, harness.** Allocated per message size, as large as the benchmark needs. The
  harness used to size one buffer for the largest message of the sweep and every rank, so
  a 1 MiB message in an 8 MiB sweep sat on huge pages (48 µs one-way against 146 µs for the
  bare C loop), and an 8 MiB message sat in a 16 MiB buffer.
* **Buffers, references.** Every program uses the same rule (``mpiworkbench.bench.buffers``,
  written out again in C and in :data:`ALLOC_PY`): 4 KiB-aligned; 2 MiB-aligned +
  ``MADV_HUGEPAGE`` from 4 MiB, where NumPy starts advising huge pages; written once before
  timing. ``mpi4py.bench`` as shipped allocates ``numpy.empty`` per size and never writes
  its send buffer, so every page of it is the kernel's shared zero page and the send side
  of a 1–8 MiB message is read from one cache-resident page (it "moves" 8 MiB in ~250 µs
  where real memory takes ~420 µs): that reference was the unfair one. With NumPy's own
  buffers written once, huge pages cover only the 2 MiB-aligned interior of the array
  (6 of 8 MiB), which costs ~1.4× at 8 MiB. Both variants are still run and printed, as
  context, and are not rivals in the "fastest" checks.
* **Timer.** OSU and our harness time the ping-pong loop as one block on rank 0 (the
  loop's bookkeeping between round trips is inside); ``mpi4py.bench`` times every round
  trip alone and reports the mean of those samples, leaving out rank 0's loop overhead
  between iterations (a function call, ``Get_rank``/``Get_size``, a list append). That is a
  difference of definition, not an error on either side; the bare mpi4py block loop,
  printed beside it, measures what we do, and the context section prints the gap.
* **Python idiom.** The bare mpi4py loops bind methods to locals and pass positional
  arguments, as our loops and ``mpi4py.bench`` do (``comm.Allreduce(x, y, op=MPI.SUM)`` in
  the loop costs a few tenths of a µs more per call).
* **A launch draws a state of the machine.** On this 2-vCPU VM a whole launch can run in
  a slow state that every program in it shares, C included, and that lasts for the launch:
  in one 11-round run, bare C allreduce of 1 MiB took 121-328 us and of 64 KiB 7.3-21.4 us
  depending on the launch, and our ``c`` and ``mpi4py-buf`` rows, timed in one launch, were
  slow or fast together; the same bare C 8 B ping-pong launched five times in a row gave
  1.87, 2.04, 0.86, 0.85, 0.84 us. How many slow launches each program draws is chance, so
  the **median over launches** of two programs that measure the same thing can differ by
  more than 10 % (that run: 17 of 25 checks on the medians, the "slow" side sometimes ours,
  sometimes the reference). The noise of a launch only ever adds time, so the checks
  compare each program's **best launch** (the minimum over rounds: the estimator Chen &
  Revels, "Robust benchmarking in noisy environments", 2016, argue for, and
  BenchmarkTools.jl and ``timeit`` report), after enough rounds that every program met
  the fast state (default 11; the slow state was seen in about a third of launches).
  The same checks on the medians are printed beside them and kept in the JSON.
* **Collectives** (ours, bare C, bare mpi4py): each call timed, barrier after it outside the
  timer, per-rank mean then the average across ranks; same counts and warm-up everywhere
  (:data:`COUNTS`), one barrier before each size, thread level single.

Reports each program's best launch, its median over rounds and [min–max], and the ratios the issue asks for:
harness / reference within 10 % at every size (mpi4py-buf ping-pong vs mpi4py.bench,
c ping-pong vs bare C, c allreduce vs bare C, mpi4py-buf allreduce vs the bare loop), and
our ``c`` backend the fastest or within 5 % of the fastest at every size ≥ 64 KiB.
On a shared machine, read the ratios and the load column; rerun when the load is not ~0.

Usage: ``.venv/bin/python benchmarks/bench_credibility.py [--rounds 11] [--json out.json]``
(about 20 s per round on an idle machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
MPIEXEC = [str(VENV_BIN / "mpiexec"), "-bind-to", "core", "-n", "2"]
PP_SMALL, PP_LARGE = [8, 1024, 8192], [65536, 1 << 20, 8 << 20]
AR_SIZES = [8, 1024, 65536, 1 << 20]
#: (iterations, warm-up), the same for every program: OSU's latency rule (10000/100 up to 8 KiB,
#: 1000/10 above), also for allreduce (more samples per launch than OSU's collective 1000/100 →
#: 100/10, for a steadier mean on a shared machine).
COUNTS = {"small": (10000, 100), "large": (1000, 10)}

BARE_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
static char *buffer(size_t n) {  /* as mpiworkbench.bench.buffers: huge pages from 4 MiB, like NumPy */
    size_t align = n >= (4u << 20) ? (2u << 20) : 4096;
    void *p = NULL;
    if (posix_memalign(&p, align, n + 8)) return NULL;
    if (align > 4096) madvise(p, n, MADV_HUGEPAGE);
    memset(p, 'a', n + 8);
    return p;
}
int main(int argc, char **argv) {
    /* argv: pingpong|allreduce iters warmup size... ; prints "size usec" (rank 0, pingpong)
       or "size avg_usec" (allreduce, OSU: per call, barrier after, avg across ranks) */
    MPI_Init(&argc, &argv);
    int rank, np; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &np);
    int ar = strcmp(argv[1], "allreduce") == 0, iters = atoi(argv[2]), skip = atoi(argv[3]);
    for (int a = 4; a < argc; a++) {
        int n = atoi(argv[a]);
        char *s = buffer(n), *r = buffer(n);
        double t0 = 0, total = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + skip; i++) {
            if (ar) {
                double t = MPI_Wtime();
                MPI_Allreduce(s, r, n / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                if (i >= skip) total += MPI_Wtime() - t;
                MPI_Barrier(MPI_COMM_WORLD);
            } else {
                if (i == skip) t0 = MPI_Wtime();
                if (rank == 0) { MPI_Send(s, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                                 MPI_Recv(r, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
                else { MPI_Recv(r, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                       MPI_Send(s, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD); }
            }
        }
        double us = ar ? total * 1e6 / iters : (MPI_Wtime() - t0) * 1e6 / (2.0 * iters), sum = 0;
        MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) printf("%d %.6f\n", n, ar ? sum / np : us);
        free(s); free(r);
    }
    MPI_Finalize();
    return 0;
}
"""

#: Buffer allocation of the Python references: the rule of mpiworkbench.bench.buffers, written
#: out again here (4 KiB-aligned; 2 MiB-aligned + MADV_HUGEPAGE from 4 MiB; touched).
ALLOC_PY = r"""
import ctypes
import numpy as np
def buffer(n, fill=97):
    align = 2 << 20 if n >= 4 << 20 else 4096
    raw = np.empty(n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    a = raw[off:off + n]
    if align > 4096:
        ctypes.CDLL(None).madvise(ctypes.c_void_p(a.ctypes.data), ctypes.c_size_t(n), 14)
    a.fill(fill)
    return a
"""

BARE_PY = ALLOC_PY + r"""
import sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
kind, iters, skip = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
wtime, barrier, send, recv, allreduce, SUM = MPI.Wtime, comm.Barrier, comm.Send, comm.Recv, comm.Allreduce, MPI.SUM
for n in map(int, sys.argv[4:]):
    s, r = buffer(n, 97), buffer(n, 98)
    if kind == "allreduce":  # OSU: each call timed, barrier after it; average across ranks
        x, y = s.view(np.float64), r.view(np.float64)
        total = 0.0
        barrier()
        for i in range(iters + skip):
            t = wtime()
            allreduce(x, y, SUM)
            if i >= skip:
                total += wtime() - t
            barrier()
        avg = comm.reduce(total * 1e6 / iters, op=MPI.SUM, root=0)
        if comm.rank == 0:
            print(n, avg / comm.size)
    else:  # OSU ping-pong: rank 0 times the loop as one block, one-way = round trip / 2
        peer, t0 = 1 - comm.rank, 0.0
        barrier()
        for i in range(iters + skip):
            if i == skip:
                t0 = wtime()
            if comm.rank == 0:
                send(s, peer, 1); recv(r, peer, 1)
            else:
                recv(r, peer, 1); send(s, peer, 1)
        if comm.rank == 0:
            print(n, (wtime() - t0) * 1e6 / (2 * iters))
"""

#: mpi4py.bench's pingpong, its code unchanged; only the arrays it asks ``numpy.empty`` for are
#: touched (CRED_ALLOC=numpy: NumPy's own allocation, written once) or also allocated by our rule
#: (CRED_ALLOC=aligned). Untouched, its send buffer is the kernel's zero page.
MPI4PY_BENCH_DRIVER = ALLOC_PY + r"""
import os
import sys
_empty = np.empty
def _empty_for_bench(shape, dtype=float, *args, **kwargs):
    if dtype == "B" and not args and not kwargs and isinstance(shape, int):
        if os.environ["CRED_ALLOC"] == "aligned":
            return buffer(shape)
        array = _empty(shape, dtype)
        array.fill(97)
        return array
    return _empty(shape, dtype, *args, **kwargs)
np.empty = _empty_for_bench
from mpi4py import MPI
from mpi4py.bench import pingpong
assert sys.argv[1] == "pingpong", sys.argv
pingpong(MPI.COMM_WORLD, sys.argv[2:])
"""

#: Context only: mpi4py.bench as shipped (untouched send buffer = zero page) and with NumPy's
#: own (touched) buffers, whose huge pages cover only the 2 MiB-aligned interior of an array.
AS_SHIPPED = "mpi4py.bench (as shipped)"
NUMPY_BUFFERS = "mpi4py.bench (NumPy buffers)"


def busy_cores(window: float = 0.3) -> float:
    def read():
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
        return sum(f) - f[3] - f[4]
    a = read()
    time.sleep(window)
    return (read() - a) / os.sysconf("SC_CLK_TCK") / window


def wait_until_quiet(limit: float, patience: float) -> float:
    """Sample the machine until fewer than *limit* cores are busy (at most *patience* s); the last sample."""
    deadline = time.monotonic() + patience
    while True:
        busy = busy_cores()
        if busy <= limit or time.monotonic() >= deadline:
            return busy
        time.sleep(2.0)


def run(cmd: list[str], env_extra: dict | None = None, timeout: float = 600) -> str:
    env = {**os.environ, "MPI4PY_RC_THREAD_LEVEL": "single", "MPIEXEC_TIMEOUT": str(int(timeout)),
           **(env_extra or {})}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout + 30)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return proc.stdout


def ours(bench: str, backends: str, sizes: list[int], group: str, tmp: Path) -> dict:
    iters, skip = COUNTS[group]
    out = tmp / f"ours_{bench}_{group}.json"
    run(MPIEXEC + [sys.executable, "-m", "mpi4py", "-m", "mpiworkbench", "bench", bench, "--backend", backends,
                   "--sizes", ",".join(map(str, sizes)), "--iterations", str(iters), "--warmup", str(skip),
                   "--time-cap", "60", "--thread-level", "single", "--no-load-check", "--quiet",
                   "--json", str(out)])
    doc = json.loads(out.read_text())
    return {(r["backend"], r["size"]): r["t_us"] for r in doc["rows"]}


def mpi4py_bench(sizes: list[int], group: str, driver: Path, alloc: str) -> dict:
    """``mpi4py.bench pingpong`` with our counts; *alloc*: 'aligned' (ours), 'numpy', 'shipped'."""
    iters, skip = COUNTS[group]
    prog = [str(driver)] if alloc != "shipped" else ["-m", "mpi4py.bench", "--thread-level", "single"]
    text = run(MPIEXEC + [sys.executable, *prog, "pingpong",
                          "-m", str(min(sizes)), "-n", str(max(sizes)), "-l", str(iters), "-s", str(skip),
                          "--large-size", str(1 << 40), "--huge-size", str(1 << 40)],
               env_extra={"CRED_ALLOC": alloc})
    name = {"aligned": "mpi4py.bench", "numpy": NUMPY_BUFFERS, "shipped": AS_SHIPPED}[alloc]
    got = {}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+[\d.]+\s+\|\s+([\d.eE+-]+)", line)
        if m and int(m.group(1)) in sizes:
            got[(name, int(m.group(1)))] = float(m.group(2)) * 1e6
    return got


def bare_c(exe: Path, kind: str, sizes: list[int], group: str) -> dict:
    iters, skip = COUNTS[group]
    text = run(MPIEXEC + [str(exe), kind, str(iters), str(skip), *map(str, sizes)])
    return {(f"bare C", int(a)): float(b) for a, b in (line.split() for line in text.splitlines() if line.strip())}


def bare_py(script: Path, kind: str, sizes: list[int], group: str) -> dict:
    iters, skip = COUNTS[group]
    text = run(MPIEXEC + [sys.executable, "-m", "mpi4py", str(script), kind, str(iters), str(skip),
                          *map(str, sizes)])
    return {("bare mpi4py", int(a)): float(b) for a, b in (line.split() for line in text.splitlines() if line.strip())}


def make_checks(value: dict) -> list[dict]:
    """The 25 checks on one summary *value*[(bench, who, size)] of the rounds."""
    checks = []

    def ratio(bench, ours_name, ref_name, size, limit):
        a, b = value.get((bench, ours_name, size)), value.get((bench, ref_name, size))
        if a is None or b is None:
            return
        checks.append({"check": f"{bench} {ours_name} / {ref_name}", "size": size, "ratio": a / b,
                       "ok": abs(a / b - 1) <= limit, "limit": f"±{limit:.0%}"})

    for size in PP_SMALL + PP_LARGE:
        ratio("pingpong", "mpi4py-buf", "mpi4py.bench", size, 0.10)
        ratio("pingpong", "c", "bare C", size, 0.10)
    for size in AR_SIZES:
        ratio("allreduce", "c", "bare C", size, 0.10)
        ratio("allreduce", "mpi4py-buf", "bare mpi4py", size, 0.10)
    for bench, sizes in (("pingpong", PP_SMALL + PP_LARGE), ("allreduce", AR_SIZES)):
        for size in [s for s in sizes if s >= 65536]:
            rivals = {who: t for (b, who, s), t in value.items()
                      if b == bench and s == size and who not in (AS_SHIPPED, NUMPY_BUFFERS)}
            fastest = min(rivals.values())
            checks.append({"check": f"{bench} c vs fastest ({min(rivals, key=rivals.get)})", "size": size,
                           "ratio": rivals["c"] / fastest, "ok": rivals["c"] <= 1.05 * fastest, "limit": "<= 1.05"})
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=11,
                        help="launches of every program; the checks use each program's best (default 11)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--quiet-limit", type=float, default=0.25,
                        help="before each launch wait until fewer cores than this are busy (default 0.25)")
    parser.add_argument("--patience", type=float, default=60.0,
                        help="longest wait for a quiet machine before a launch, seconds (default 60)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wbcred-") as tmpdir:
        tmp = Path(tmpdir)
        (tmp / "bare.c").write_text(BARE_C)
        exe = tmp / "bare"
        subprocess.run([str(VENV_BIN / "mpicc"), "-O3", "-march=native", "-o", str(exe), str(tmp / "bare.c")], check=True)
        (tmp / "bare.py").write_text(BARE_PY)
        driver = tmp / "mpi4py_bench_driver.py"
        driver.write_text(MPI4PY_BENCH_DRIVER)
        jobs = []
        for group, sizes in (("small", PP_SMALL), ("large", PP_LARGE)):
            jobs += [
                ("pingpong", lambda s=sizes, g=group: ours("pingpong", "mpi4py-buf,c", s, g, tmp)),
                ("pingpong", lambda s=sizes, g=group: mpi4py_bench(s, g, driver, "aligned")),
                ("pingpong", lambda s=sizes, g=group: mpi4py_bench(s, g, driver, "numpy")),
                ("pingpong", lambda s=sizes, g=group: mpi4py_bench(s, g, driver, "shipped")),
                ("pingpong", lambda s=sizes, g=group: bare_c(exe, "pingpong", s, g)),
                ("pingpong", lambda s=sizes, g=group: bare_py(tmp / "bare.py", "pingpong", s, g)),
            ]
        for group, sizes in (("small", AR_SIZES[:2]), ("large", AR_SIZES[2:])):
            jobs += [
                ("allreduce", lambda s=sizes, g=group: ours("allreduce", "mpi4py-buf,c", s, g, tmp)),
                ("allreduce", lambda s=sizes, g=group: bare_c(exe, "allreduce", s, g)),
                ("allreduce", lambda s=sizes, g=group: bare_py(tmp / "bare.py", "allreduce", s, g)),
            ]
        samples: dict[tuple, list[float]] = {}
        loads, launches = [], []
        for rnd in range(args.rounds):
            order = list(range(len(jobs)))
            random.Random(rnd).shuffle(order)
            for j in order:
                bench, job = jobs[j]
                loads.append(wait_until_quiet(args.quiet_limit, args.patience))
                got = job()
                launches.append({"round": rnd, "bench": bench, "busy_cores_before": loads[-1],
                                 "t_us": [{"who": w, "size": s, "t_us": v} for (w, s), v in got.items()]})
                for (who, size), t in got.items():
                    samples.setdefault((bench, who, size), []).append(t)
            print(f"# round {rnd + 1}/{args.rounds} done; busy cores before launches: "
                  f"{min(loads[-len(jobs):]):.2f}-{max(loads[-len(jobs):]):.2f}", flush=True)
    med = {k: statistics.median(v) for k, v in samples.items()}
    best = {k: min(v) for k, v in samples.items()}
    checks = make_checks(best)
    checks_med = make_checks(med)
    print(f"\n# best launch, median [min-max] over {args.rounds} rounds, us: ping-pong one-way (rank 0), "
          f"allreduce per call (avg across ranks); thread level single; mpiexec -bind-to core -n 2;\n"
          f"# busy cores before launches {min(loads):.2f}-{max(loads):.2f} (machine has {os.cpu_count()}); "
          f"buffers per size, touched; '{AS_SHIPPED}' and '{NUMPY_BUFFERS}': context only")
    print(f"{'':<10} {'':<26} {'size':>8} {'best':>10} {'median':>10}  [min-max]")
    for (bench, who, size), t in sorted(best.items()):
        v = samples[(bench, who, size)]
        print(f"{bench:<10} {who:<26} {size:>8} {t:10.2f} {med[(bench, who, size)]:10.2f}  [{min(v):.2f}-{max(v):.2f}]")
    print("\n# checks on each program's best launch (these decide the exit status); in brackets the same check "
          "on the medians over rounds (see the docstring: a launch's state is chance)")
    for c, cm in zip(checks, checks_med):
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']:<42} {c['size']:>8}  ratio {c['ratio']:.3f}  ({c['limit']})"
              f"   [medians: {'ok' if cm['ok'] else 'FAIL'} {cm['ratio']:.3f}]")
    context = []
    for size in PP_SMALL + PP_LARGE:
        for a, b, why in (("mpi4py-buf", "bare mpi4py", "same definition (OSU block timing)"),
                          ("mpi4py.bench", "bare mpi4py", "per-round-trip timer vs block timer"),
                          (NUMPY_BUFFERS, "mpi4py.bench", "NumPy's unaligned buffers vs ours"),
                          (AS_SHIPPED, NUMPY_BUFFERS, "untouched (zero-page) send buffer vs touched")):
            x, y = best.get(("pingpong", a, size)), best.get(("pingpong", b, size))
            if x is not None and y is not None:
                context.append({"pair": f"pingpong {a} / {b}", "size": size, "ratio": x / y,
                                "diff_us": x - y, "why": why})
    print("\n# context, not counted: what the definitions do (best launches; ratio, difference in us)")
    for c in context:
        print(f"     {c['pair']:<42} {c['size']:>8}  ratio {c['ratio']:.3f}  {c['diff_us']:+8.2f} us  ({c['why']})")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "context": context, "checks_on_medians": checks_med,
            "best_us": [{"bench": b, "who": w, "size": s, "t_us": t} for (b, w, s), t in sorted(best.items())],
            "medians_us": [{"bench": b, "who": w, "size": s, "t_us": t} for (b, w, s), t in sorted(med.items())],
            "checks": checks, "busy_cores_before_launches": loads, "rounds": args.rounds,
            "launches": launches}, indent=2))
    failed = [c for c in checks if not c["ok"]]
    print(f"\n{len(checks) - len(failed)}/{len(checks)} checks passed on the best launches "
          f"({sum(c['ok'] for c in checks_med)}/{len(checks_med)} on the medians over rounds)"
          + (" — the machine was loaded; rerun when idle before trusting a failure" if max(loads) > 0.25 else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
