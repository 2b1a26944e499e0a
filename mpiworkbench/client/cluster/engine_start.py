"""What each engine of a workbench's own cluster runs: ipyparallel's ``ipengine``, with its
nanny forked from the engine instead of started as a second interpreter in the middle of the
engine's registration.

Every ipyparallel engine starts a *nanny* (a second process that relays signals to it, which
the workbench needs to kill a rank blocked in MPI). ipyparallel starts it only once the
controller has accepted the engine, as a new interpreter (``python -m
ipyparallel.engine.nanny``), and waits for its imports, on the critical path of every start
(what it cost: docs/measurements.md, "Starting and stopping a cluster"). Here the engine
forks its nanny as soon as it has imported ipyparallel's engine (which imports everything the
nanny needs), before NumPy, MPI, threads or sockets exist (:class:`ForkedNanny`): the nanny
costs a fork, and is ready before the engine registers; ipyparallel's ``start_nanny`` then
hands it its arguments (:func:`handing_over`). And the engine imports NumPy before it waits
for the controller: ipyparallel's serializer imports it at the engine's first reply anyway (the
rank map), which was on the critical path too.

The engines start together with the controller (:func:`mpiworkbench.client.cluster.start.new_cluster`)
and read its connection file, which the controller writes in place: an engine could read it
half-written. :func:`wait_for_connection_file` waits until it parses.

Should the forked nanny fail, ipyparallel's own is started instead. Two more changes: the
kernel gets the sockets ipykernel's debugger needs (:func:`debuggable`), and the engine's heart,
by which the controller counts it registered, starts only once its sockets are connected to the
controller's queues (:func:`connected_before_registered`: a queue drops what it cannot deliver).

Before its first MPI call, and again once mpi4py has loaded its library, the engine checks that
it holds one MPI library, its implementation's (:func:`one_mpi`): one that holds two refuses the
world with one message, before it registers.

This file is run by path (:data:`ENGINE_CMD`), never imported by the engines as part of
:mod:`mpiworkbench.client`, whose import cost every rank would pay. Of :mod:`mpiworkbench` it
imports only that check (:mod:`mpiworkbench.core.onempi`) and, once MPI is initialised, the record of
the rank's files in ``/dev/shm`` (:func:`mpiworkbench.core.shm.record_footprint`) that its cluster's
watchdog reads after the rank's death.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

#: The command an engine set runs (ipyparallel's ``EngineLauncher.engine_cmd``; ipyparallel
#: appends ``--mpi`` and the cluster's arguments). ``runpy.run_path`` runs this file without
#: putting its directory on ``sys.path`` (where ``trace.py`` or ``profile.py`` would shadow
#: the standard library's).
ENGINE_CMD = [sys.executable, "-c", f"import runpy; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"]


def handing_over(nanny: ForkedNanny, original: Callable[..., Any]) -> Callable[..., Any]:
    """A replacement for ``ipyparallel.engine.nanny.start_nanny`` that gives *nanny* the
    arguments ipyparallel would have started a new one with, and returns what that returns
    (the nanny's URL and its process). Falls back to *original* (ipyparallel's own nanny)
    when *nanny* has died or fails to answer."""
    used = False

    def start_nanny(**kwargs: Any):
        nonlocal used
        if used or nanny.poll() is not None:
            return original(**kwargs)
        used = True
        try:
            nanny.stdin.write(pickle.dumps({**kwargs, "pid": os.getpid()}))  # it watches us, its parent
            nanny.stdin.close()
            url = nanny.stdout.readline().decode("utf8").strip()
        except OSError:  # it died meanwhile
            url = ""
        if not url:
            nanny.kill()
            nanny.wait()
            return original(**kwargs)
        return url, nanny

    return start_nanny


#: The environment variable naming the controller's connection file for the engines, and how
#: long to wait for it (``PATH:SECONDS``); set by :func:`mpiworkbench.client.cluster.start.new_cluster`.
CONNECTION_FILE_VARIABLE = "MPIWORKBENCH_ENGINE_CONNECTION_FILE"


def wait_for_connection_file(spec: str, poll_s: float = 0.02) -> bool:
    """Wait until the file of *spec* (``PATH:SECONDS``) holds a whole JSON object, at most
    SECONDS; whether it does. (ipyparallel's engine waits only until the file exists.)"""
    path, _, seconds = spec.rpartition(":")
    deadline = time.monotonic() + float(seconds or 0)
    while True:
        try:
            if isinstance(json.loads(Path(path).read_text()), dict):
                return True
        except (OSError, ValueError):  # not there yet, or caught half-written
            pass
        if time.monotonic() > deadline:
            return False  # ipyparallel's engine then says what is missing
        time.sleep(poll_s)


class ForkedNanny:
    """A nanny forked from this engine once the modules it needs are imported: what
    :func:`handing_over` needs of a ``subprocess.Popen`` (``stdin``, ``stdout``, ``poll``,
    ``kill``, ``wait``). Copy-on-write shares the engine's imports: the nanny costs a fork
    instead of a second interpreter importing ipyparallel, IPython's traitlets, zmq, tornado
    and psutil (0.14 s of CPU per engine here, over a quarter of an engine's whole start).

    The child is what ``python -m ipyparallel.engine.nanny`` would be: a session of its own, its
    arguments pickled on stdin, its URL written to stdout (line-buffered), every other
    descriptor of the engine closed (the nanny notices the engine's end when its stdout pipe
    closes, so it must hold no copy of the engine's end of it)."""

    def __init__(self) -> None:
        args_r, args_w = os.pipe()
        url_r, url_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the nanny; never returns into the engine's code
            status = 1
            try:
                os.setsid()
                os.dup2(args_r, 0)
                os.dup2(url_w, 1)
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                from ipyparallel.engine.nanny import KernelNanny

                with os.fdopen(0, "rb") as stdin:
                    kwargs = pickle.load(stdin)
                kwargs["pipe"] = os.fdopen(1, "w", buffering=1)
                KernelNanny.main(**kwargs)
                status = 0
            except BaseException:  # noqa: BLE001 - a child of fork must end here, whatever happened
                import traceback

                traceback.print_exc()
            finally:
                os._exit(status)
        os.close(args_r)
        os.close(url_w)
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = os.fdopen(args_w, "wb")
        self.stdout = os.fdopen(url_r, "rb")

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
            except ChildProcessError:
                self.returncode = 0
        return self.returncode


#: Seconds an engine waits for its shell and IOPub connections to the controller before it
#: starts its heart anyway (see :func:`connected_before_registered`).
CONNECT_WAIT_S = 60.0
#: Seconds after which an engine still waiting for them logs which connections it waits for.
CONNECT_NOTE_S = 5.0


def connected_before_registered(engine_class: type, limit_s: float = CONNECT_WAIT_S,
                                note_s: float = CONNECT_NOTE_S) -> None:
    """Make *engine_class* (ipyparallel's ``IPEngine``) start its heart beating only once every
    socket it connects at registration has completed the ZeroMQ handshake: its shell with each
    queue (the controller's ``mux``, ``task`` and its broadcast scheduler), its control socket
    with the nanny and its IOPub with the controller's: at most *limit_s* seconds.

    The controller counts an engine registered at its first heartbeat, and clients then send
    to it. A queue is a ZeroMQ ROUTER, which silently drops a message for an engine whose
    connection to it is not yet made. The broadcast schedulers (``wb.run``'s path then; it is
    rank 0's relay now, which waits for each rank's connection) were processes the controller
    started last, while the engines already connected: an engine that tried before one bound
    waited out ZeroMQ's reconnect interval, and a first ``wb.run`` sent then reached every rank
    but that one, which the others then waited for in a collective
    (seen in the test suite under load: rank 1 in ``MPI_Barrier``, rank 0 idle, no request).
    Each connection is watched from before it is made (a socket monitor), so no handshake is
    missed; past *note_s* it logs which connections it still waits for, past *limit_s* it starts
    its heart as ipyparallel would, and logs which connections were not made."""
    import zmq
    from zmq.utils.monitor import recv_monitor_message

    original_complete, original_heart = engine_class.complete_registration, engine_class.start_heartbeat
    watching: dict[int, dict[Any, tuple[Any, list]]] = {}  # engine (its id) -> its connections not yet made

    async def complete_registration(self, msg, connect, maybe_tunnel):
        pending: dict[Any, tuple[Any, list]] = {}  # socket -> (its monitor, the endpoints it connects to)

        def watched(sock, url, *args, **kwargs):
            if sock.type in (zmq.ROUTER, zmq.PUB, zmq.XPUB):  # (not the heart's: it starts later)
                if sock not in pending:  # watched from before its first connect
                    pending[sock] = (sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED), [])
                pending[sock][1].append(url)
            return connect(sock, url, *args, **kwargs)

        watching[id(self)] = pending
        return await original_complete(self, msg, watched, maybe_tunnel)

    def start_heartbeat(self, *args, **kwargs):
        pending = watching.pop(id(self), {})
        began = time.monotonic()
        deadline, noted = began + limit_s, False
        for sock, (monitor, endpoints) in pending.items():
            made = 0  # (counted, not matched by name: an endpoint may be reported resolved)
            while made < len(endpoints):
                now = time.monotonic()
                if not noted and now >= began + note_s:  # said while it waits: the workbench's report
                    # of a world that did not come up shows the launchers' output at its own limit
                    self.log.warning("still waiting after %g s for %d of the connections to %s to be made",
                                     note_s, len(endpoints) - made, ", ".join(endpoints))
                    noted = True
                until = deadline if noted else min(deadline, began + note_s)
                if monitor.poll(max(0, int(1000 * (until - now)))):
                    made += recv_monitor_message(monitor)["event"] == zmq.EVENT_HANDSHAKE_SUCCEEDED
                elif until >= deadline:
                    break
            if made < len(endpoints):
                self.log.warning("only %d of the connections to %s made within %g s: starting the heart anyway",
                                 made, ", ".join(endpoints), limit_s)
            sock.disable_monitor()
            monitor.close(linger=0)
        pending.clear()
        return original_heart(self, *args, **kwargs)

    # in place, not a subclass: ipyparallel's ``main`` is ``IPEngine.launch_instance``, bound at import
    engine_class.complete_registration, engine_class.start_heartbeat = complete_registration, start_heartbeat


#: Debug requests after which the rank runs on (debugpy resumes every thread with each of them;
#: a step's end is a new stop, with its own event).
RESUMING = ("continue", "next", "stepIn", "stepOut", "disconnect")

#: Set to ``0`` in the environment a cluster starts in, its engines' kernels are ipyparallel's
#: own, without the debugger's sockets (what ``benchmarks/debugger_cost.py`` compares against).
DEBUGGER_VARIABLE = "MPIWORKBENCH_DEBUGGER"


def debuggable(kernel_class: type) -> type:
    """*kernel_class* (ipyparallel's engine kernel) with what ipykernel's debugger needs and
    ipyparallel never gives it (its engines log "debugpy_stream undefined, debugging will not
    be enabled"): the ``zmq.STREAM`` socket that carries the Debug Adapter Protocol to debugpy,
    on the control thread's loop (``debug_request`` is a control message, served while the
    main thread is stopped at a breakpoint), and the socket through which the debugger asks the
    kernel's shell to start debugpy. Both are idle until a client sends a ``debug_request``:
    debugpy is imported and started only then (:mod:`mpiworkbench.client.calls.debugging`
    connects that shell socket when it opens the rank's kernel to clients)."""
    import zmq
    from zmq.eventloop.zmqstream import ZMQStream

    from mpiworkbench.client.cluster.rank_debugpy import (  # here: this file is run by path, lean (see above)
        let_go_of_late_stops, listen, match_tracing, note_stop, recording_stops)

    class DebuggableKernel(kernel_class):
        def __init__(self, **kwargs: Any) -> None:
            thread = kwargs.get("control_thread")
            if thread is not None and kwargs.get("debugpy_stream") is None:
                context = zmq.Context.instance()
                stream, shell = context.socket(zmq.STREAM), context.socket(zmq.DEALER)
                stream.linger = shell.linger = 1000
                kwargs["debugpy_stream"] = ZMQStream(stream, thread.io_loop)
                kwargs["debug_shell_socket"] = shell
            super().__init__(**kwargs)
            debugger = getattr(self, "debugger", None)
            if debugger is not None:
                debugger.event_callback = recording_stops(debugger.event_callback)

        async def do_debug_request(self, msg: dict) -> dict:
            # debugpy sends no "continued" event for a client's own continue (the protocol does
            # not ask it to), nor when it lets the rank go at a disconnect: noted here, before the
            # request runs on, so that a stop after it is noted after it (the stop record said
            # "stopped" for good once a %%px --debug cell had continued its ranks and detached)
            command, debugger = msg.get("command"), getattr(self, "debugger", None)
            if command in ("continue", "disconnect"):
                note_stop({"event": "continued"})
            if command in RESUMING and debugger is not None and hasattr(debugger, "stopped_threads"):
                # ipykernel's own count of the stopped threads, which only a "continued"
                # event empties, kept true: what its debugInfo says is stopped is stopped (a
                # client that continues a thread debugpy runs already waits for ever: pydevd
                # answers once that thread next runs traced code)
                debugger.stopped_threads = set()
            if command == "initialize":  # debugpy started here, race-free (rank_debugpy.listen)
                failed = listen(debugger)
                if failed:  # said, not retried ipykernel's way
                    return {"type": "response", "command": command, "request_seq": msg.get("seq"), "seq": 0,
                            "success": False, "message": f"debugpy did not start in this rank's process: {failed}"}
            reply = await super().do_debug_request(msg)
            if command == "disconnect":
                let_go_of_late_stops(debugger)
            return reply

        # each request the main thread takes up runs traced by debugpy only while a client debugs
        # the rank (rank_debugpy.match_tracing: after a session, not 2-17 times slower for good)
        async def execute_request(self, stream, ident, parent):
            match_tracing(getattr(self, "debugger", None))
            return await super().execute_request(stream, ident, parent)

        def apply_request(self, stream, ident, parent):
            match_tracing(getattr(self, "debugger", None))
            return super().apply_request(stream, ident, parent)

    DebuggableKernel.__name__ = DebuggableKernel.__qualname__ = kernel_class.__name__
    return DebuggableKernel


def one_mpi(when: str) -> None:
    """Exit this engine (``mpiexec`` then ends the world) when it holds another MPI library than
    its implementation's, or two (:func:`mpiworkbench.core.onempi.check`), saying so on stderr,
    which the workbench shows (the engines' output) when the world does not come up."""
    from mpiworkbench.core import onempi  # here: this file is run by path, and only an MPI engine needs the check

    try:
        onempi.check(when)
    except onempi.TwoMPIs as exc:
        print(f"mpiworkbench: {exc}", file=sys.stderr, flush=True)
        MPI = sys.modules.get("mpi4py.MPI")
        if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
            MPI.COMM_WORLD.Abort(1)
        os._exit(1)


def record_footprint() -> None:
    """Record this rank's files in ``/dev/shm`` in its world's footprint directory, when its
    cluster made one (:func:`mpiworkbench.client.cluster.record.footprint_directory`, named by the
    ``IPP_PROFILE_DIR`` and ``IPP_CLUSTER_ID`` ipyparallel gives every engine): the watchdog removes
    what they name once the rank is dead, however it died."""
    profile, cluster_id = os.environ.get("IPP_PROFILE_DIR"), os.environ.get("IPP_CLUSTER_ID")
    if not profile or cluster_id is None:
        return
    from mpiworkbench.client.cluster.record import footprint_directory  # here: this file is run by path
    from mpiworkbench.core import shm  # here: as above (both import the standard library only)

    directory = str(footprint_directory(profile, cluster_id))
    try:
        if shm.record_footprint(directory):
            shm.drop_finished_records(directory)  # the ranks of earlier worlds (restarts) that left nothing
    except OSError as exc:  # a record is for clean-up: a rank never fails for want of one
        print(f"mpiworkbench: this rank's footprint was not recorded in {directory}: {exc}", file=sys.stderr)


def main() -> None:
    mpi = "--mpi" in sys.argv[1:]
    if mpi:
        one_mpi("before its first MPI call")
    from ipyparallel.engine import app  # also everything the nanny imports

    if os.environ.get(DEBUGGER_VARIABLE, "1") != "0":
        app.Kernel = debuggable(app.Kernel)
    connected_before_registered(app.IPEngine)

    # An engine that never asks for its nanny (it failed before registering) exits and so
    # closes the nanny's stdin: the nanny then ends too.
    try:
        app.start_nanny = handing_over(ForkedNanny(), app.start_nanny)
    except OSError:  # no fork (out of processes): ipyparallel starts its own nanny, later
        pass
    try:
        import numpy  # noqa: F401 - see the module's docstring: needed at the first reply anyway
    except ImportError:
        pass
    if mpi:
        from mpi4py import MPI  # noqa: F401 - ipyparallel's engine imports it next (its rank is its id)

        one_mpi("once mpi4py loaded its library")
        record_footprint()
    if os.environ.get(CONNECTION_FILE_VARIABLE):
        wait_for_connection_file(os.environ[CONNECTION_FILE_VARIABLE])
    app.main()


if __name__ == "__main__":
    main()
