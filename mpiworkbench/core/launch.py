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
import time
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
    return impl.command(np, cli_program(argv), mpi_args, mpiexec=find_mpiexec(impl))


def cli_program(argv: Sequence[str]) -> list[str]:
    """What each rank of a CLI job runs: ``python -m mpi4py -m mpiworkbench *argv`` (mpi4py's
    runner turns an unhandled exception on any rank into ``MPI_Abort``)."""
    return [sys.executable, "-m", "mpi4py", "-m", "mpiworkbench", *argv]


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

    The job is :func:`run`'s: a wall-clock limit (``MPIEXEC_TIMEOUT``, default
    :data:`DEFAULT_TIMEOUT_S` unless the caller's environment sets one), and what ranks that
    died without cleaning up (a failing rank's ``MPI_Abort``, the limit) left is removed.
    """
    if np < 1:
        raise ValueError(f"--np must be at least 1; got {np}")
    return run(np, cli_program(argv), impl, mpi_args, timeout_s, extra_env=check_transport(transport))


def judged(code: int, started: float, limit: float) -> int:
    """*code* of an ``mpiexec`` started at *started* (``time.monotonic()``) with a wall-clock
    limit of *limit* seconds — or :data:`TIMED_OUT` when it ran that long and still said 0 (MPICH's
    Hydra was seen to exit 0 at ``MPIEXEC_TIMEOUT``, ranks still running: a job cut short must
    not read as a success)."""
    if code == 0 and time.monotonic() - started >= limit:
        print(f"mpiworkbench: the job reached its wall-clock limit of {limit:g} s", file=sys.stderr, flush=True)
        return TIMED_OUT
    return code


#: Seconds to wait for the ranks of a finished ``mpiexec`` to have exited.
EXIT_TIMEOUT_S = 10.0


def remove_left_behind(directory: str) -> list[str]:
    """Remove what the ranks that recorded their footprints in *directory* left in
    ``/dev/shm`` (nothing, when they all finalised) and the files their launcher left in the
    temporary directory (:func:`mpiworkbench.core.shm.remove_launcher_files`); return the paths removed."""
    records = shm.read_footprints(directory)
    shm.wait_gone(records, EXIT_TIMEOUT_S)
    return shm.remove_left_behind(records, also=shm.own_files) + shm.remove_launcher_files(records)


def needs_launch(np: int | None) -> bool:
    """Whether a CLI command asked to run on *np* ranks must start ``mpiexec`` itself."""
    if mpi.launched_by_mpiexec():
        return False
    return np is not None and np >= 1


# -- any command on the ranks of one implementation (`make test-mpi`) ---------------------
#: Seconds ``mpiexec`` is given beyond its own wall-clock limit (``MPIEXEC_TIMEOUT``: MPICH's
#: and Intel MPI's Hydra and Open MPI's ``prterun`` all honour it and end the job themselves)
#: before :func:`run` ends the job: SIGTERM to ``mpiexec``, then SIGKILL to every process
#: of the job after :data:`END_GRACE_S`.
LIMIT_GRACE_S = 15.0
#: Seconds between the SIGTERM and the SIGKILL when :func:`run` ends a job itself.
END_GRACE_S = 5.0
#: Exit code of :func:`run` when it had to end the job itself (as ``timeout(1)``'s).
TIMED_OUT = 124
_PR_SET_CHILD_SUBREAPER = 36
#: Whether this process adopts the orphans among its descendants (set by :func:`main`).
_reaper = False


def _tree(pid: int) -> list[int]:
    """*pid*'s descendants, read from ``/proc`` (ranks may sit in sessions of their own:
    Hydra and ``prterun`` put each one in a new process group, so no ``killpg`` reaches them)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], list(children.get(pid, []))
    while stack:
        found.append(stack.pop())
        stack.extend(children.get(found[-1], []))
    return found


def _signal(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _end(proc: subprocess.Popen) -> None:
    """End the job of *proc* (an ``mpiexec``): SIGTERM to it (it then ends its ranks and
    removes its own files), SIGKILL to it and every process below it after :data:`END_GRACE_S`."""
    import signal

    pids = [proc.pid, *_tree(proc.pid)]  # before anything dies: orphans are found no more
    _signal([proc.pid], signal.SIGTERM)
    try:
        proc.wait(END_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    if proc.returncode is None:  # its ranks started meanwhile too
        pids += [p for p in _tree(proc.pid) if p not in pids]
    else:  # reaped: its pid is free for another process
        pids.remove(proc.pid)
    _signal(pids, signal.SIGKILL)
    proc.wait()


def _end_strays() -> int:
    """SIGKILL and reap what is left below this process once its ``mpiexec`` has exited
    (ranks it left running; this process adopts them: :func:`main`); how many there were."""
    import signal

    strays = _tree(os.getpid())
    if strays:
        print(f"mpiworkbench: ending {len(strays)} process(es) the job left running", file=sys.stderr)
        _signal(strays, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return len(strays)


def run(np: int, command: Sequence[str], impl: Implementation | None = None,
        mpi_args: Sequence[str] = (), timeout_s: float | None = None,
        extra_env: dict[str, str] | None = None) -> int:
    """Run *command* (any program, e.g. ``python -m mpi4py -m pytest tests/mpi``) on *np*
    ranks under the ``mpiexec`` of MPI implementation *impl* (default: this process's) and
    return its exit code.

    The ranks get the implementation's environment and the world size they check
    (:func:`job_environment`); *mpi_args* go to ``mpiexec`` (the interposer's preload:
    ``python -m mpiworkbench.trace.library``), *extra_env* to its environment (a transport,
    :data:`TRANSPORTS`). The job has a wall-clock limit, *timeout_s*
    (default ``$MPIEXEC_TIMEOUT``, else :data:`DEFAULT_TIMEOUT_S`): ``mpiexec`` is told it
    and ends the job itself; should it not within :data:`LIMIT_GRACE_S` more, the whole job
    is ended here (:data:`TIMED_OUT`). Afterwards what the job's ranks left in ``/dev/shm``
    (:func:`remove_left_behind`) and ``mpiexec``'s session directory in the temporary
    directory (:func:`mpiworkbench.core.shm.remove_session_dirs`) are removed once nothing
    uses them.
    """
    if np < 1:
        raise ValueError(f"-n must be at least 1; got {np}")
    impl = impl or implementations.current()
    env = job_environment(np, impl)
    env.update(extra_env or {})
    env["MPIWORKBENCH_UNDER_MPIEXEC"] = "1"
    limit = float(timeout_s if timeout_s is not None else env.get("MPIEXEC_TIMEOUT") or DEFAULT_TIMEOUT_S)
    env["MPIEXEC_TIMEOUT"] = str(max(1, int(limit)))
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-footprints-") as footprints:
        env[shm.FOOTPRINT_DIR_VARIABLE] = footprints
        started, code = time.monotonic(), None
        proc = subprocess.Popen(impl.command(np, command, mpi_args, mpiexec=find_mpiexec(impl)), env=env)
        try:
            try:
                code = judged(proc.wait(limit + LIMIT_GRACE_S), started, limit)
            except subprocess.TimeoutExpired:
                print(f"mpiworkbench: the job outlived its wall-clock limit of {limit:g} s by "
                      f"{LIMIT_GRACE_S:g} s: ending it", file=sys.stderr, flush=True)
                _end(proc)
                code = TIMED_OUT
        except BaseException:  # Ctrl-C: no ranks left running
            _end(proc)
            raise
        finally:
            if _reaper and _end_strays() and code == 0:
                code = 1  # ranks were still running when their mpiexec ended: the job did not finish
            remove_left_behind(footprints)
            shm.remove_session_dirs(proc.pid, env.get("TMPDIR") or tempfile.gettempdir())
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m mpiworkbench.core.launch [--mpi NAME] -n N [--timeout S] [MPIEXEC_ARGS...] -- COMMAND...``:
    :func:`run`. Arguments before ``--`` that are not its own go to ``mpiexec``."""
    import ctypes

    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m mpiworkbench.core.launch [--mpi NAME] -n N [--timeout S] "
             "[MPIEXEC_ARGS...] -- COMMAND...")
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        raise SystemExit(usage)
    split = argv.index("--")
    own, command = argv[:split], argv[split + 1:]
    options: dict[str, str] = {}
    mpi_args: list[str] = []
    while own:
        arg = own.pop(0)
        if arg in ("--mpi", "-n", "--timeout"):
            if not own:
                raise SystemExit(f"{arg} needs a value; {usage}")
            options[arg] = own.pop(0)
        else:
            mpi_args.append(arg)
    if "-n" not in options:
        raise SystemExit(usage)
    impl = implementations.get(options.get("--mpi") or implementations.current().name)
    # orphaned ranks (their mpiexec gone) become this process's children: found and ended
    global _reaper
    try:
        _reaper = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        pass
    timeout = float(options["--timeout"]) if "--timeout" in options else None
    import signal

    def terminated(signum, frame):  # a SIGTERM (timeout(1), make's) ends the job as Ctrl-C does
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    return run(int(options["-n"]), command, impl, mpi_args, timeout)


if __name__ == "__main__":
    sys.exit(main())
