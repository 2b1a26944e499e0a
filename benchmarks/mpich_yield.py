"""Does a rank waiting inside MPI give its core away? MPICH's yield settings, measured.

Two ranks: rank 0 sleeps ``--sleep`` seconds while rank 1 waits for it in ``MPI_Barrier``;
the CPU time rank 1 burns meanwhile is what a waiting rank takes from the others on a
shared machine (two cores, a third rank, the notebook kernel and the controller). Each
setting is launched ``--launches`` times, interleaved; the table gives the median CPU
seconds of the waiting rank per second waited.

    .venv/bin/python benchmarks/mpich_yield.py [--launches 5] [--sleep 2]

``mpiworkbench.core.launch.YIELD_WHILE_WAITING`` (``--yield-while-waiting`` of the CLI,
``new_cluster(yield_while_waiting=True)``) holds the setting this measurement supports.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from mpiworkbench.core.launch import YIELD_WHILE_WAITING, world_launch

SETTINGS = {
    "default (busy poll)": {},
    "MPIR_CVAR_POLLS_BEFORE_YIELD=1": {"MPIR_CVAR_POLLS_BEFORE_YIELD": "1"},
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE=1": {"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1"},
    "MPIR_CVAR_ENABLE_HEAVY_YIELD=1": {"MPIR_CVAR_ENABLE_HEAVY_YIELD": "1"},
    "YIELD_WHILE_WAITING": dict(YIELD_WHILE_WAITING),
}

WAITER = """
import sys, time
from mpi4py import MPI
comm = MPI.COMM_WORLD
comm.Barrier()
c0, w0 = time.process_time(), time.perf_counter()
if comm.rank == 0:
    time.sleep(float(sys.argv[1]))
comm.Barrier()
cpu, wall = time.process_time() - c0, time.perf_counter() - w0
if comm.rank == 1:
    print(cpu / wall)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "waiter.py"
        script.write_text(WAITER)
        busy: dict[str, list[float]] = {name: [] for name in SETTINGS}
        for _ in range(args.launches):
            for name, extra in SETTINGS.items():
                launch = world_launch(np=2, limit_s=120, yield_while_waiting=False)
                env = {k: v for k, v in launch.environ().items() if not k.startswith("MPIR_CVAR_")}
                env.update(extra)
                out = subprocess.run(launch.command(2, [sys.executable, str(script), str(args.sleep)]),
                                     env=env, capture_output=True, text=True, timeout=120, check=True)
                busy[name].append(float(out.stdout.strip()))
    load = os.getloadavg()[0]
    print(f"# CPU seconds a rank burns per second waiting in MPI_Barrier (median of {args.launches}; load {load:.1f})")
    for name, values in busy.items():
        print(f"{name:<36} {statistics.median(values):5.2f}   [{min(values):.2f}, {max(values):.2f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
