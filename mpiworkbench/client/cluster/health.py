"""Whether a session's MPI world lives, and when it has died, why: the controller gone,
``mpiexec``'s time limit, a rank killed, aborted or crashed, ranks lost while ``mpiexec`` runs;
and what the world's ``mpiexec`` and controller wrote, shown on demand (``wb.world_log()``)
rather than dumped into the notebook."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from mpiworkbench.client.cluster import start


def _launchers(cluster) -> list:
    return [*(cluster.engines or {}).values(), *([cluster.controller] if cluster.controller is not None else [])]


def alive(process: Any) -> bool:
    """Whether a launcher's local process (a ``psutil.Process``) still runs."""
    try:
        return process.is_running() and process.status() != "zombie"
    except Exception:  # noqa: BLE001 - psutil: the process is gone
        return False


def controller_alive(cluster) -> bool:
    process = getattr(cluster.controller, "process", None)
    if process is not None:
        return alive(process)
    return getattr(cluster.controller, "state", None) == "running"


def local_processes(cluster) -> dict[str, Any]:
    """Engine set id → its launcher's local process (``mpiexec``); batch launchers have none."""
    found = {key: getattr(launcher, "process", None) for key, launcher in (cluster.engines or {}).items()}
    return {key: process for key, process in found.items() if process is not None}


def drop_ended_engine_sets(cluster) -> None:
    """Forget *cluster*'s local engine sets whose ``mpiexec`` has ended (another notebook
    restarted the world: the new engines are not in this cluster object), so that they do not
    make :func:`engines_exited` read the new world as dead."""
    for key, process in local_processes(cluster).items():
        if not alive(process):
            cluster.engines.pop(key, None)


def engines_exited(cluster) -> bool:
    """Whether a local engine launcher (``mpiexec``) has ended: the MPI world is gone.

    Batch launchers (Slurm) have no local process; for them this is ``False`` and the
    session relies on the engines' registrations instead.
    """
    for launcher in (cluster.engines or {}).values():
        process = getattr(launcher, "process", None)
        if process is not None and not alive(process):
            return True
    return False


def world_log(cluster) -> str:
    """What the cluster's ``mpiexec`` (and controller) wrote: the ranks' last words when the
    world died (ipyparallel keeps it after the process has ended)."""
    parts = []
    for launcher in _launchers(cluster):
        try:
            output = launcher.get_output() or ""
        except Exception as exc:  # noqa: BLE001 - a diagnostic must not fail
            output = f"(not readable: {exc})"
        data = getattr(launcher, "stop_data", None)
        head = f"--- {getattr(launcher, 'identifier', type(launcher).__name__)}" + (f" (ended: {data})" if data else "")
        parts.append(head + "\n" + output.rstrip())
    return "\n".join(parts)


#: What a dead world's ``mpiexec`` output says (upper-cased; MPICH's and Intel MPI's Hydra,
#: Open MPI's prterun), and the cause it names: the first that matches wins.
_CAUSES = (
    (("APPLICATION TIMED OUT", "TIME LIMIT FOR JOB EXECUTION HAS BEEN REACHED"),
     "mpiexec ended it at its wall-clock limit (MPIEXEC_TIMEOUT in the environment it was started with)"),
    (("MAXIMUM NUMBER OF HEARTBEATS MISSES REACHED",),
     "the ranks heard nothing from the controller for ENGINE_PATIENCE_S and left (the controller stalled or died)"),
    (("MPI_ABORT",), "{who} called MPI_Abort"),
    (("SEGMENTATION FAULT", "(SIGNAL 11)", "SIGNAL 11 "), "{who} crashed (segmentation fault)"),
    (("(SIGNAL 9)", "SIGNAL 9 ", "EXIT CODE: 9\n"),
     "{who} was killed (SIGKILL: by hand, by wb.restart() elsewhere, or by the out-of-memory killer)"),
    (("(SIGNAL 15)", "SIGNAL 15 "), "{who} was terminated (SIGTERM)"),
    (("BAD TERMINATION", "EXITED ON SIGNAL"), "{who} ended abnormally"),
)
#: Seconds :func:`how_it_ended` gives a local ``mpiexec`` to end its job once ranks are gone.
MPIEXEC_SETTLE_S = 3.0


def how_it_ended(cluster, client, ranks: dict[int, int], hosts: dict[int, str] | None = None) -> str:
    """Why the MPI world of *cluster* is dead, in one sentence (``""`` while it lives): the
    controller gone, ``mpiexec``'s time limit, a rank killed, aborted or crashed, or ranks
    that unregistered while ``mpiexec`` runs (a lost node, a rank cut off). *ranks*: engine id →
    rank of the world; *hosts*: rank → host.

    (Which rank ended a world ``mpiexec`` does not tell reliably: Hydra names the first process
    it finds ended, often one it killed itself while cleaning up.)"""
    if cluster is None:
        return ""
    if not controller_alive(cluster):
        data = getattr(cluster.controller, "stop_data", None)
        return f"the controller has gone{f' ({data})' if data else ''}: every rank lost it"
    # a local mpiexec ends its job a moment after a rank died: its words name the cause
    deadline = time.monotonic() + MPIEXEC_SETTLE_S
    while local_processes(cluster) and not engines_exited(cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    if engines_exited(cluster):
        said = world_log(cluster).upper()
        cause = next((why for marks, why in _CAUSES if any(mark in said for mark in marks)), None)
        codes = [getattr(launcher, "stop_data", None) or {} for launcher in (cluster.engines or {}).values()]
        code = next((data.get("exit_code") for data in codes if data.get("exit_code") is not None), None)
        cause = (cause or "its mpiexec ended").format(who="a rank").replace(
            "ENGINE_PATIENCE_S", f"{start.ENGINE_PATIENCE_S:g} s")
        return cause + (f" (mpiexec's exit code {code})" if code is not None else "")
    try:
        registered = set(client.ids)
    except Exception:  # noqa: BLE001 - the client lost its controller
        return "this notebook lost its connection to the controller"
    gone = sorted(rank for engine, rank in ranks.items() if engine not in registered)
    if not gone:
        return ""
    hosts = hosts or {}
    named = [f"rank {rank}" + (f" (on {hosts[rank]})" if hosts.get(rank) else "") for rank in gone]
    return (f"{', '.join(named)} {'has' if len(gone) == 1 else 'have'} unregistered while mpiexec still runs: "
            "killed, crashed, or cut off (its node unreachable)")


def world_died(cluster, client, n: int) -> bool:
    """Whether the MPI world of a started *cluster* has died: its ``mpiexec`` ended, fewer than
    *n* engines are registered, or *client* lost the controller."""
    if engines_exited(cluster):
        return True
    try:
        return len(client.ids) < n
    except Exception:  # noqa: BLE001 - the client lost its controller
        return True


def _output(launcher) -> str:
    """What a launcher's process wrote, as its file holds it now ("" without a file: a batch job's own)."""
    with contextlib.suppress(OSError, TypeError):
        return Path(launcher.output_file).read_text(errors="replace")
    return ""


#: Lines of an engine launcher's output a failed start shows (:func:`launcher_report`).
REPORT_LINES = 15


def launcher_report(cluster, lines: int = REPORT_LINES) -> str:
    """What *cluster*'s engine launchers say, for an error message: each one's ``mpiexec``
    (running, or ended with its code) and the last *lines* lines of its output (the engines'
    log), read from its file as it is now."""
    said = []
    for key, launcher in (cluster.engines or {}).items():
        process = getattr(launcher, "process", None)
        if process is None:
            state = "no local process (a batch job)"
        elif alive(process):
            state = f"mpiexec (pid {process.pid}) running"
        else:
            code = getattr(launcher, "stop_data", None) or {}
            state = f"mpiexec (pid {process.pid}) ended" + (f" with {code.get('exit_code')}" if code else "")
        tail = _output(launcher).rstrip().splitlines()[-lines:]
        said.append(f"engine set {key}: {state}; " + ("its last output:\n    " + "\n    ".join(tail) if tail
                                                       else "no output"))
    said = said or ["no engine set was started"]
    controller = getattr(cluster, "controller", None)
    if getattr(controller, "output_file", None):
        said.append(_controller_errors(controller, lines))
    return "\n".join(said)


#: What marks a line of the controller's output as an error (a queue's thread that died, say, with
#: "zmq.error.ZMQError: Address already in use": every engine then waits for that queue).
_ERROR_MARKS = ("Error", "Exception", "Traceback", "CRITICAL", "ERROR")


def _controller_errors(controller, lines: int) -> str:
    process = getattr(controller, "process", None)
    state = f"controller (pid {process.pid}) {'running' if alive(process) else 'ended'}" if process else "controller"
    errors = [line for line in _output(controller).splitlines() if any(mark in line for mark in _ERROR_MARKS)][-lines:]
    return f"{state}; " + ("the errors in its output:\n    " + "\n    ".join(errors) if errors
                           else "no error in its output")
