"""Start the CLI's MPI commands under ``mpiexec`` — or run them in the world they are in.

``mpiworkbench wave --np 2 …`` typed in a shell re-launches itself as
``mpiexec -n 2 python -m mpi4py -m mpiworkbench wave …`` (``python -m mpi4py`` turns an
unhandled exception on any rank into ``MPI_Abort``, so a failing rank never hangs the
world), with a wall-clock limit. Typed under an existing ``mpiexec``/``srun`` it just runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from mpiworkbench.core import implementations, mpi, shm
from mpiworkbench.core.implementations import Implementation

#: Default wall-clock limit (seconds) of an MPI job started by the CLI.
DEFAULT_TIMEOUT_S = 1800


#: Threads each MPI rank's numerical libraries may start. One rank per core is the MPI
#: model; a multi-threaded BLAS in every rank oversubscribes the cores (on 2 cores a
#: 16k-element daxpy+dot was measured at 29 ms instead of 4 µs).
_ONE_THREAD_PER_RANK = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


#: MPICH control variables that make a rank waiting inside MPI give its core away instead
#: of spinning (for more ranks than cores): ``nanosleep`` in MPICH's yield. Measured with
#: ``benchmarks/mpich_yield.py`` on the MPICH 5.0.2 (ch4) of the ``mpich`` wheel: a rank
#: waiting in a barrier burned 0.23 CPU s per s waited with it, 0.86 without (medians of 3
#: launches, load 3);
#: ``MPIR_CVAR_POLLS_BEFORE_YIELD=1`` and ``MPIR_CVAR_CH4_PROGRESS_THROTTLE=1`` (the library
#: knows both) changed nothing measurable there, so they are not set. Off by default: the
#: sleep lands in every wait, so communication gets slower — ``speedup inner --np 1,2,3``
#: (n = 2**18, NumPy, 200 reductions per repetition) went from 9.4-14 to 35-41 ms at 2 ranks
#: and from 8.2-9.4 to 47-75 ms at 3 (3 launches each, interleaved, load 2.4-2.5), and the
#: 3-rank MPI test tier (halo, wave, speedup runner, CG) took 33 and 38 s against 23 and 31 s.
YIELD_WHILE_WAITING = {"MPIR_CVAR_ENABLE_HEAVY_YIELD": "1"}
#: Set to ``1`` to ask for :data:`YIELD_WHILE_WAITING` in every rank this process starts.
YIELD_VARIABLE = "MPIWORKBENCH_YIELD_WHILE_WAITING"


def rank_environment(yield_while_waiting: bool | None = None) -> dict[str, str]:
    """Environment for MPI ranks: one BLAS/OpenMP thread each, unless the user chose otherwise.

    With *yield_while_waiting* (default: ``$MPIWORKBENCH_YIELD_WHILE_WAITING == "1"``) also
    :data:`YIELD_WHILE_WAITING`, unless the user set those variables already.
    """
    env = {var: os.environ.get(var, "1") for var in _ONE_THREAD_PER_RANK}
    if yield_while_waiting is None:
        yield_while_waiting = os.environ.get(YIELD_VARIABLE) == "1"
    if yield_while_waiting:
        env.update({var: os.environ.get(var, value) for var, value in YIELD_WHILE_WAITING.items()})
    return env


def find_mpiexec(impl: Implementation | None = None) -> str:
    """Path of the ``mpiexec`` of MPI implementation *impl* (default: this process's,
    :func:`mpiworkbench.core.implementations.current`).

    For the venv's own MPI the one beside the interpreter wins (the ``mpich`` wheel installs
    it into the venv), so the launcher and the library always match; ``PATH`` is the fallback.
    Another implementation's lives in its prefix, or a ``RuntimeError`` says how to install it.
    """
    impl = impl or implementations.current()
    if not impl.in_venv:
        return impl.require().mpiexec()
    beside = Path(sys.executable).with_name("mpiexec")
    if beside.exists():
        return str(beside)
    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError(
            "no mpiexec found beside "
            f"{sys.executable} or on PATH; install the 'mpich' wheel "
            "(pip install mpich) or put your MPI's mpiexec on PATH"
        )
    return found


def mpiexec_command(np: int, argv: list[str], mpi_args: Sequence[str] = (),
                    impl: Implementation | None = None) -> list[str]:
    """The command line that runs ``python -m mpiworkbench *argv`` on *np* ranks of MPI
    implementation *impl* (*mpi_args*: options of ``mpiexec`` itself, e.g. ``-genv NAME VALUE``).

    (MPICH's Hydra runs more ranks than cores without an oversubscription flag; Open MPI is
    given its own, :attr:`~mpiworkbench.core.implementations.Implementation.launcher_args`.)
    """
    impl = impl or implementations.current()
    program = [sys.executable, "-m", "mpi4py", "-m", "mpiworkbench", *argv]
    return [find_mpiexec(impl), *impl.launcher_args, *mpi_args, "-n", str(np), *program]


def job_environment(np: int, impl: Implementation | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of an ``mpiexec`` job of *np* ranks under *impl*: *base* (default this
    process's) set up for the implementation, one thread per rank (:func:`rank_environment`),
    and the world size the ranks check (:func:`~mpiworkbench.core.implementations.check_world_size`)."""
    impl = impl or implementations.current()
    env = impl.apply(dict(os.environ) if base is None else base)
    env.update(rank_environment())
    env[implementations.SIZE_VARIABLE] = str(np)
    return env


#: How the ranks of one host talk to each other: ``auto`` lets MPICH choose (shared memory
#: between ranks of one host, the network between hosts); ``network`` makes every pair of ranks
#: talk through the network stack as ranks on different nodes do — TCP, over the loopback
#: interface between ranks of one host (MPICH's ``MPIR_CVAR_NOLOCAL``; UCX restricted to its TCP
#: transport, else it would use its own shared memory; bridge devices allowed, which UCX skips by
#: default: on a host whose only network interface is a bridge, e.g. a hypervisor's or a
#: simulated cluster's head node, TCP would otherwise find no interface and MPI_Init fail).
#: Measured with ``bench pingpong --np 2`` (mpi4py-buf, MPICH 5.0.2 wheel, 2-core VM): 0.95 µs
#: and 9.4 µs at 8 B and 64 KiB through shared memory, 6.7 µs and 21.6 µs through TCP.
TRANSPORTS: dict[str, dict[str, str]] = {
    "auto": {},
    "network": {"MPIR_CVAR_NOLOCAL": "1", "UCX_TLS": "tcp,self", "UCX_TCP_BRIDGE_ENABLE": "y"},
}


def transport() -> str:
    """Which of :data:`TRANSPORTS` this process's environment selects (``auto`` unless every
    variable of another one is set as it sets them)."""
    for name, variables in TRANSPORTS.items():
        if variables and all(os.environ.get(k) == v for k, v in variables.items()):
            return name
    return "auto"


def check_transport(name: str) -> dict[str, str]:
    """The environment of transport *name*, or a ``ValueError`` naming the choices."""
    if name not in TRANSPORTS:
        raise ValueError(f"unknown transport {name!r}; choose one of {', '.join(TRANSPORTS)}")
    return TRANSPORTS[name]


def run_under_mpiexec(np: int, argv: list[str], timeout_s: float | None = None,
                      mpi_args: Sequence[str] = (), transport: str = "auto",
                      impl: Implementation | None = None) -> int:
    """Run ``mpiworkbench *argv`` on *np* ranks and return its exit code.

    *transport*: how the ranks talk (:data:`TRANSPORTS`). *impl*: the MPI implementation
    (default: this process's).

    The job gets a wall-clock limit (``MPIEXEC_TIMEOUT``, default
    :data:`DEFAULT_TIMEOUT_S` unless the caller's environment sets one). Each rank records
    its ``/dev/shm`` files once MPI is initialised (:func:`mpiworkbench.core.shm.record_footprint`); once ``mpiexec`` has
    returned, those of ranks that died without removing them (a failing rank's
    ``MPI_Abort``, the wall-clock limit) are removed (:func:`mpiworkbench.core.shm.remove_left_behind`).
    """
    if np < 1:
        raise ValueError(f"--np must be at least 1; got {np}")
    extra = check_transport(transport)
    impl = impl or implementations.current()
    env = job_environment(np, impl)
    env.update(extra)
    env["MPIWORKBENCH_UNDER_MPIEXEC"] = "1"
    limit = timeout_s if timeout_s is not None else env.get("MPIEXEC_TIMEOUT", DEFAULT_TIMEOUT_S)
    env["MPIEXEC_TIMEOUT"] = str(int(float(limit)))
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-footprints-") as footprints:
        env[shm.FOOTPRINT_DIR_VARIABLE] = footprints
        try:
            proc = subprocess.run(mpiexec_command(np, argv, mpi_args, impl), env=env, check=False)
        finally:
            remove_left_behind(footprints)
    return proc.returncode


#: Seconds to wait for the ranks of a finished ``mpiexec`` to have exited.
EXIT_TIMEOUT_S = 10.0


def remove_left_behind(directory: str) -> list[str]:
    """Remove what the ranks that recorded their footprints in *directory* left in
    ``/dev/shm`` (nothing, when they all finalised); return the paths removed."""
    records = shm.read_footprints(directory)
    shm.wait_gone(records, EXIT_TIMEOUT_S)
    return shm.remove_left_behind(records, also=shm.own_files)


def needs_launch(np: int | None) -> bool:
    """Whether a CLI command asked to run on *np* ranks must start ``mpiexec`` itself."""
    if mpi.launched_by_mpiexec():
        return False
    return np is not None and np >= 1
