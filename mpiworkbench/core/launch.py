"""Start the CLI's MPI commands under ``mpiexec`` — or run them in the world they are in.

``mpiworkbench wave --np 2 …`` typed in a shell re-launches itself as
``mpiexec -n 2 python -m mpi4py -m mpiworkbench wave …`` (``python -m mpi4py`` turns an
unhandled exception on any rank into ``MPI_Abort``, so a failing rank never hangs the
world), with a wall-clock limit. Typed under an existing ``mpiexec``/``srun`` it just runs.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Mapping, Sequence

from mpiworkbench.core import implementations, mpi, processes, shm, usable, yielding
from mpiworkbench.core.implementations import Implementation

#: Default wall-clock limit (seconds) of an MPI job started by the CLI.
DEFAULT_TIMEOUT_S = 1800


#: Threads each MPI rank's numerical libraries may start. One rank per core is the MPI
#: model; a multi-threaded BLAS in every rank oversubscribes the cores (measured:
#: docs/measurements.md, section "The ranks' environment").
_ONE_THREAD_PER_RANK = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


#: MPICH control variables that make a rank waiting inside MPI give its core away instead
#: of spinning (for more ranks than cores): ``nanosleep`` in MPICH's yield.
#: ``MPIR_CVAR_POLLS_BEFORE_YIELD`` and ``MPIR_CVAR_CH4_PROGRESS_THROTTLE`` changed nothing
#: measurable, so they are not set. Off by default: the sleep lands in every wait, so
#: communication gets slower (measured with ``benchmarks/mpich_yield.py``: docs/measurements.md,
#: section "The ranks' environment").
YIELD_WHILE_WAITING = {yielding.HEAVY_YIELD: "1"}
#: Set to ``1`` to ask for :data:`YIELD_WHILE_WAITING` in every rank this process starts.
YIELD_VARIABLE = "MPIWORKBENCH_YIELD_WHILE_WAITING"


def rank_environment(yield_while_waiting: bool | None = None) -> dict[str, str]:
    """Environment for MPI ranks: one BLAS/OpenMP thread each, unless the user chose otherwise.

    With *yield_while_waiting* (default: ``$MPIWORKBENCH_YIELD_WHILE_WAITING == "1"``) also
    :data:`YIELD_WHILE_WAITING`, unless the user set those variables already.
    """
    env = {var: os.environ.get(var, "1") for var in _ONE_THREAD_PER_RANK}
    yielding.yield_after_s()  # a bad $MPIWORKBENCH_YIELD_AFTER_S is refused here, before any rank starts
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


#: Variables that give an ``mpiexec`` job a wall-clock limit: MPICH's Hydra reads
#: ``MPIEXEC_TIMEOUT`` and ``MP_TIMEOUT``, Intel MPI's also ``I_MPI_JOB_TIMEOUT`` and
#: ``I_MPI_MPIEXEC_TIMEOUT``, Open MPI's ``prterun`` ``MPIEXEC_TIMEOUT``. A limit belongs to the
#: job that asked for it (a CLI job, a test run): inherited from the caller's environment by an
#: interactive world, it ended the world minutes after it started (a JupyterLab started from a
#: shell or a Makefile that exported one passed it to every kernel).
LIMIT_VARIABLES = ("MPIEXEC_TIMEOUT", "MP_TIMEOUT", "I_MPI_JOB_TIMEOUT", "I_MPI_MPIEXEC_TIMEOUT")
#: What a CLI job of the workbench sets for its own ranks (:func:`run`): a world started from
#: inside one (a kernel a CLI job started) must not record its ranks in that job's directory.
JOB_VARIABLES = ("MPIWORKBENCH_UNDER_MPIEXEC", shm.FOOTPRINT_DIR_VARIABLE)


@dataclass(frozen=True)
class Launch:
    """How the ranks of one MPI world are started: what :func:`world_launch` returns, and what
    every place that starts ranks uses — a workbench's cluster, a profile's ``ipcluster``, the
    Slurm batch template, the CLI's jobs, the test runner, the benchmarks.

    ``mpiexec`` is the command up to the rank count: ``env -u`` for every variable in
    ``unset`` (a launcher such as ipyparallel's passes the caller's whole environment on, so
    they are removed on the command line, where every launcher honours it), then the
    implementation's ``mpiexec`` and its own arguments. ``environment`` is set on top of the
    caller's environment.
    """

    mpiexec: tuple[str, ...]
    environment: dict[str, str]
    unset: tuple[str, ...]
    #: What starts the ranks: ``mpiexec`` or ``srun`` (:mod:`mpiworkbench.core.launchers`).
    launcher: str = "mpiexec"

    def command(self, np: int, program: Sequence[str], mpi_args: Sequence[str] = ()) -> list[str]:
        """The command line that runs *program* on *np* ranks (*mpi_args*: options of ``mpiexec``)."""
        return [*self.mpiexec, *mpi_args, "-n", str(np), *program]

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment of the launch: *base* (default this process's) without the
        variables of ``unset``, with ``environment``."""
        env = {k: v for k, v in (os.environ if base is None else base).items() if k not in self.unset}
        env.update(self.environment)
        return env


def world_launch(impl: Implementation | None = None, np: int | None = None, *, limit_s: float | None = None,
                 yield_while_waiting: bool | None = None, extra: Mapping[str, str] | None = None) -> Launch:
    """The one recipe for starting the ranks of an MPI world of implementation *impl* (default:
    this process's): its ``mpiexec`` (:func:`find_mpiexec`), the implementation's variables (those
    of every other one removed), one thread per rank (:func:`rank_environment`), the world size
    the ranks check when *np* is known
    (:func:`~mpiworkbench.core.implementations.check_world_size`). A launcher and a library that
    do not belong together are refused first (:func:`~mpiworkbench.core.usable.check`).

    A wall-clock limit exists only when asked for: *limit_s* seconds (``MPIEXEC_TIMEOUT``),
    otherwise every variable of :data:`LIMIT_VARIABLES` is removed, whatever the caller's
    environment holds; so are :data:`JOB_VARIABLES` (a CLI job's own). *extra*: more variables
    to set (a transport, :data:`TRANSPORTS`; a job's own).
    """
    impl = impl or implementations.current()
    usable.check(impl)  # a launcher and a library that do not belong together: refused here
    environment = impl.variables()
    environment.update(rank_environment(yield_while_waiting))
    if np is not None:
        environment[implementations.SIZE_VARIABLE] = str(np)
    if limit_s is not None:
        environment["MPIEXEC_TIMEOUT"] = str(max(1, int(limit_s)))
    environment.update(extra or {})
    unset = [name for name in (*LIMIT_VARIABLES, *JOB_VARIABLES, *implementations.foreign_variables(impl))
             if name not in environment]
    words = [word for name in unset for word in ("-u", name)]
    env_program = shutil.which("env") or "/usr/bin/env"
    launcher = impl.launcher()
    if launcher.srun:  # Slurm's srun with the library's PMI (mpiworkbench.core.launchers)
        starter = (*launcher.words, *(launcher.time_args(limit_s) if limit_s is not None else ()))
    else:
        starter = (find_mpiexec(impl), *impl.launcher_args)
    return Launch((env_program, *words, *starter), environment, tuple(unset), launcher.name)


def mpiexec_command(np: int, argv: list[str], mpi_args: Sequence[str] = (),
                    impl: Implementation | None = None) -> list[str]:
    """The command line that runs ``python -m mpiworkbench *argv`` on *np* ranks of MPI
    implementation *impl* (*mpi_args*: options of ``mpiexec`` itself, e.g. ``-genv NAME VALUE``):
    :func:`world_launch`'s.

    (MPICH's Hydra runs more ranks than cores without an oversubscription flag; Open MPI is
    given its own, :attr:`~mpiworkbench.core.implementations.Implementation.launcher_args`.)
    """
    return world_launch(impl, np).command(np, cli_program(argv), mpi_args)


def cli_program(argv: Sequence[str]) -> list[str]:
    """What each rank of a CLI job runs: ``python -m mpi4py -m mpiworkbench *argv`` (mpi4py's
    runner turns an unhandled exception on any rank into ``MPI_Abort``)."""
    return [sys.executable, "-m", "mpi4py", "-m", "mpiworkbench", *argv]


#: How the ranks of one host talk to each other: ``auto`` lets MPICH choose (shared memory
#: between ranks of one host, the network between hosts); ``network`` makes every pair of ranks
#: talk through the network stack as ranks on different nodes do — TCP, over the loopback
#: interface between ranks of one host (MPICH's ``MPIR_CVAR_NOLOCAL``; UCX restricted to its TCP
#: transport, else it would use its own shared memory; bridge devices allowed, which UCX skips by
#: default: on a host whose only network interface is a bridge, e.g. a hypervisor's or a
#: simulated cluster's head node, TCP would otherwise find no interface and MPI_Init fail).
#: Measured: docs/measurements.md, section "Micro-benchmarks", *Shared memory against the network*.
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


def job_exit_code(code: int, started: float, limit: float) -> int:
    """The exit code of a job whose ``mpiexec`` was started at *started* (``time.monotonic()``)
    with a wall-clock limit of *limit* seconds and exited with *code*: *code*, or
    :data:`TIMED_OUT` when it ran that long and still said 0 (MPICH's Hydra was seen to exit 0 at
    ``MPIEXEC_TIMEOUT``, ranks still running: a job cut short must not read as a success)."""
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
    return shm.remove_after_exit(shm.read_footprints(directory), EXIT_TIMEOUT_S)


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


def _end(proc: subprocess.Popen) -> None:
    """End the job of *proc* (an ``mpiexec``): SIGTERM to it (it then ends its ranks and
    removes its own files), SIGKILL to it and every process below it after :data:`END_GRACE_S`
    (ranks may sit in sessions of their own: Hydra and ``prterun`` put each one in a new process
    group, so no ``killpg`` reaches them). Processes are named by pid and start time
    (:class:`~mpiworkbench.core.processes.Identity`): a rank that exited during the grace period
    gave its pid away, and the process that got it is left alone."""
    job = processes.tree(filter(None, [processes.Identity.of(proc.pid)]))  # before anything dies
    if job:
        processes.send(job[0], signal.SIGTERM)
    try:
        proc.wait(END_GRACE_S)
    except subprocess.TimeoutExpired:
        job += [who for who in processes.tree(job[:1]) if who not in job]  # its ranks started meanwhile too
    for who in job:
        processes.send(who, signal.SIGKILL)
    proc.wait()


def _end_strays() -> int:
    """SIGKILL and reap what is left below this process once its ``mpiexec`` has exited
    (ranks it left running; this process adopts them: :func:`main`); how many there were."""
    strays = [who for who in map(processes.Identity.of, processes.descendants(os.getpid())) if who is not None]
    if strays:
        print(f"mpiworkbench: ending {len(strays)} process(es) the job left running", file=sys.stderr)
        for who in strays:
            processes.send(who, signal.SIGKILL)
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

    The ranks are started as :func:`world_launch` says; *mpi_args* go to ``mpiexec`` (the interposer's preload:
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
    limit = float(timeout_s if timeout_s is not None else os.environ.get("MPIEXEC_TIMEOUT") or DEFAULT_TIMEOUT_S)
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-footprints-") as footprints:
        launch = world_launch(impl, np, limit_s=limit, extra={
            **(extra_env or {}), "MPIWORKBENCH_UNDER_MPIEXEC": "1", shm.FOOTPRINT_DIR_VARIABLE: footprints})
        env = launch.environ()
        started, code = time.monotonic(), None
        proc = subprocess.Popen(launch.command(np, command, mpi_args), env=env)
        try:
            try:
                code = job_exit_code(proc.wait(limit + LIMIT_GRACE_S), started, limit)
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

    def terminated(signum, frame):  # a SIGTERM (timeout(1), make's) ends the job as Ctrl-C does
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminated)
    return run(int(options["-n"]), command, impl, mpi_args, timeout)


if __name__ == "__main__":
    sys.exit(main())
