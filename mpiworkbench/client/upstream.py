"""Every private name of ipyparallel, ipykernel, jupyter_client and IPython the runtime uses, in
one place: each hook is one small function here, its comment naming the upstream object and why
no public way serves. Nothing else in :mod:`mpiworkbench` reaches a private name of theirs
(``tests/unit/test_architecture.py`` checks it).

A release of one of those packages may rename what a hook reaches. :func:`moved` reads the
installed packages and names every hook that is gone (the unit tier fails with its message);
``pyproject.toml`` bounds the packages to the minor versions the suite has run against. To try a
newer release::

    .venv/bin/pip install 'ipyparallel==9.3.*'
    .venv/bin/python -m mpiworkbench.client.upstream   # names each hook that moved, exit 1
    make test

then widen the bound in ``pyproject.toml`` (docs/architecture.md, "Upstream's private names").

Imports nothing at module level: ranks run some hooks (:func:`filter_statuses`), and importing
ipyparallel's client there would cost every rank for nothing.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NamedTuple


class Hook(NamedTuple):
    """One private name of an upstream class the runtime uses."""

    owner: str  # "module:Class"
    name: str  # the private attribute or method
    used_by: str  # the function of this module that reaches it
    why: str


HOOKS = (
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_targets", "targets",
         "the engine ids a call went to, in the order of its results (no public accessor)"),
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_metadata", "metadata",
         "the per-engine metadata the client's IOPub thread updates while the call runs"),
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_fname", "name_call",
         "the name ipyparallel shows for a call in errors and %pxresult ('%px', as its own magic sets)"),
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_output_ready", "output_streamed",
         "whether the call's output was streamed already (then its errors were shown too)"),
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_iopub_streaming_output_callback", "stream_output",
         "shows one IOPub message of an engine while %px streams; given a parent for the output captured before"),
    Hook("ipyparallel.client.asyncresult:AsyncResult", "_republish_displaypub", "republish",
         "shows a rank's rich output (plots) in the notebook as %px shows it"),
    Hook("ipyparallel.client.client:Client", "_engines", "engine_identities",
         "engine id → its registration's uuid: the identity its queue is addressed by"),
    Hook("ipyparallel.client.client:Client", "_query_stream", "catch_up_registrations",
         "the hub's query socket, to ask which engines it has registered (connection_request)"),
    Hook("ipyparallel.client.client:Client", "_send", "catch_up_registrations",
         "sends that request on the client's I/O thread (its reply awaited a bounded time)"),
    Hook("ipyparallel.client.client:Client", "_register_engine", "catch_up_registrations",
         "takes an engine the client missed as its notification would (its waiters told)"),
    Hook("ipyparallel.client.client:Client", "_config", "client_config",
         "the connection file's contents (transport, addresses) for a proxy of a rank's kernel"),
    Hook("ipyparallel.client.client:Client", "_build_targets", "engine_ids",
         "%px's targets ('all', a slice, a list) as engine ids, as ipyparallel resolves them"),
    Hook("ipyparallel.client.client:Client", "_output_futures", "end_output",
         "a relayed call's output came in its reply: end the wait for an idle status never sent"),
    Hook("ipyparallel.engine.app:IPEngine", "_kernel_bound", "kernel_bound",
         "whether the engine's kernel already listens for Jupyter clients (bind_kernel is not idempotent)"),
    Hook("ipykernel.kernelbase:Kernel", "_publish_status", "filter_statuses",
         "the busy/idle statuses a kernel publishes per request: none for calls relayed by rank 0"),
    Hook("IPython.core.interactiveshell:InteractiveShell", "_showtraceback", "show_traceback",
         "shows a custom exception handler's traceback text in the cell's output"),
)

#: The upstream objects the runtime replaces or mends in place where they are defined (each used
#: by the function of ``mpiworkbench.client`` named): none is a private name, but each is an
#: inner working of ipyparallel or ipykernel that a release may move, so :func:`moved` checks
#: them too. The engines' and the controller's processes run these before ipyparallel starts.
PATCHED = (
    Hook("ipyparallel.engine.app", "Kernel", "cluster.engine_start.main",
         "the engine's kernel class, replaced by a subclass that can be debugged (debuggable)"),
    Hook("ipyparallel.engine.app", "start_nanny", "cluster.engine_start.main",
         "the engine's nanny, replaced by one forked before the engine's imports (handing_over)"),
    Hook("ipyparallel.engine.app:IPEngine", "complete_registration", "cluster.engine_start.connected_before_registered",
         "wrapped to watch the engine's connections to the queues complete their handshakes"),
    Hook("ipyparallel.engine.app:IPEngine", "start_heartbeat", "cluster.engine_start.connected_before_registered",
         "wrapped to start the heart only once those connections are made (clients send at the first beat)"),
    Hook("ipyparallel.controller.broadcast_scheduler:BroadcastScheduler", "accumulated_replies", "cluster.controller.mend",
         "a class-level dict shared by the threaded controller's schedulers: each given its own"),
    Hook("ipyparallel.controller.broadcast_scheduler:BroadcastScheduler", "accumulated_targets", "cluster.controller.mend",
         "as accumulated_replies"),
    Hook("ipykernel.ipkernel:IPythonKernel", "debugpy_stream", "cluster.engine_start.debuggable",
         "the socket to debugpy that ipyparallel's engines never give their kernel (a constructor argument)"),
    Hook("ipykernel.kernelbase:Kernel", "debug_shell_socket", "cluster.engine_start.debuggable",
         "the socket through which the debugger asks the shell to start debugpy (a constructor argument)"),
    Hook("ipykernel.kernelbase:Kernel", "control_thread", "cluster.engine_start.debuggable",
         "the control thread whose loop the debugpy socket runs on (read from the constructor's arguments)"),
    Hook("ipykernel.kernelbase:Kernel", "do_debug_request", "cluster.engine_start.debuggable",
         "overridden to note a client's continue and disconnect, for which debugpy sends no event"),
    Hook("ipykernel.ipkernel:IPythonKernel", "debugger", "cluster.engine_start.debuggable",
         "the kernel's debugger, whose event callback is wrapped to record stops (rank_debugpy.recording_stops)"),
    Hook("ipykernel.debugger:Debugger", "event_callback", "cluster.engine_start.debuggable",
         "wrapped to record each stop and continue where the notebook reads them"),
    Hook("ipykernel.kernelbase:Kernel", "execute_request", "cluster.engine_start.debuggable",
         "overridden to trace the cell by debugpy only while a client debugs the rank (rank_debugpy.match_tracing)"),
    Hook("ipyparallel.engine.kernel:IPythonParallelKernel", "apply_request", "cluster.engine_start.debuggable",
         "overridden as execute_request, for a function sent to the rank"),
    Hook("ipykernel.debugger:Debugger", "debugpy_initialized", "cluster.rank_debugpy.match_tracing",
         "whether debugpy was ever started in the rank's process (nothing traces it before)"),
    Hook("ipykernel.debugger:Debugger", "is_started", "cluster.rank_debugpy.match_tracing",
         "whether a client has the rank's debugger started now"),
)


def _owner(hook: Hook) -> Any:
    """The class (``module:Class``) or the module a hook's name belongs to."""
    module, _, name = hook.owner.partition(":")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


def _has(cls: Any, name: str) -> bool:
    """Whether *cls* (or a base) defines *name* or sets it on its instances (``self.name =``)."""
    if hasattr(cls, name):
        return True
    for base in getattr(cls, "__mro__", ()):
        try:
            source = inspect.getsource(base)
        except (OSError, TypeError):
            continue
        if f"self.{name} =" in source or f"self.{name}:" in source:
            return True
    return False


def moved(hooks: tuple[Hook, ...] = HOOKS + PATCHED) -> list[str]:
    """A sentence for every hook (and every object patched in place) whose upstream name the
    installed packages no longer have."""
    found = []
    for hook in hooks:
        package = hook.owner.partition(".")[0].partition(":")[0]
        try:
            version = importlib.import_module(package).__version__
            present = _has(_owner(hook), hook.name)
        except (ImportError, AttributeError):
            version, present = "(not importable)", False
        if not present:
            found.append(f"{package} {version}: {hook.owner.replace(':', '.')}.{hook.name} is gone; "
                         f"mpiworkbench.client.{hook.used_by if '.' in hook.used_by else 'upstream.' + hook.used_by} "
                         f"uses it ({hook.why})")
    return found


# ------------------------------------------------------------------------ ipyparallel's client
def targets(ar: Any) -> list[int]:
    """The engine ids *ar* (an ``AsyncResult``) went to, in the order of its results; ``[]`` for
    an object that is not one."""
    found = getattr(ar, "_targets", None)  # AsyncResult._targets: an int for a call to one engine
    if isinstance(found, int):
        return [found]
    return list(found) if found else []


def metadata(ar: Any) -> list[Any]:
    """The per-engine metadata of the call *ar* (``AsyncResult._metadata``)."""
    return list(getattr(ar, "_metadata", None) or [])


def execute_inputs(ar: Any) -> list[bool]:
    """For each part of *ar* (in the order of :func:`targets`): whether its engine's
    ``execute_input`` came in — published as a kernel begins a cell that is not silent."""
    return [(md or {}).get("execute_input") is not None for md in metadata(ar)]


def name_call(ar: Any, name: str) -> None:
    """Name the call *ar* as ipyparallel's own ``%px`` names its calls (``AsyncResult._fname``)."""
    ar._fname = name


def output_streamed(ar: Any) -> bool:
    """Whether *ar*'s output, errors included, was streamed already (``AsyncResult._output_ready``)."""
    return bool(ar._output_ready)


@contextmanager
def stream_output(ar: Any) -> Iterator[None]:
    """``ar.stream_output()`` (ipyparallel's: each engine's output shown as it comes), mended for
    the output an engine published before the streaming began. ipyparallel 9.2 shows that output
    through messages with no parent, and in a kernel it keys each engine's display by its parent's
    id: every such engine's display is "-stdout", so the second engine's lines replace the first's,
    and a cell whose ranks all printed before ``%%px`` began to stream showed one rank's output
    (tests/cluster/test_px_output_complete.py). Here each gets its engine's request as parent, the
    one that engine's later messages carry — by replacing ``AsyncResult._iopub_streaming_output_callback``
    on the instance while the block runs."""
    show = ar._iopub_streaming_output_callback

    def shown(eid, msg_future, msg):
        if not msg.get("parent_header"):
            msg = {**msg, "parent_header": {"msg_id": msg_future.msg_id}}
        return show(eid, msg_future, msg)

    ar._iopub_streaming_output_callback = shown
    try:
        with ar.stream_output():
            yield
    finally:
        del ar._iopub_streaming_output_callback


def republish(part: Any, output: Any) -> None:
    """Show one rich output of the one-engine call *part* in the notebook
    (``AsyncResult._republish_displaypub``)."""
    part._republish_displaypub(output, part.engine_id)


def engine_identities(client: Any) -> dict[int, str]:
    """Engine id → the uuid of its registration (``Client._engines``)."""
    return {int(k): str(v) for k, v in (getattr(client, "_engines", None) or {}).items()}


def catch_up_registrations(client: Any, timeout: float = 10.0) -> None:
    """Take every engine the hub has registered that *client* has not heard of, telling its
    waiters (``Client._send`` of a ``connection_request`` on ``Client._query_stream``, then
    ``Client._register_engine`` per engine missed). A client that connects while engines register
    can miss their notifications (its subscription not in place yet: seen on a loaded machine), and
    ``Client.wait_for_engines`` waits on those alone, for ever or to its timeout. A hub that does
    not answer within *timeout* seconds (stalled) is left to that timeout."""
    try:
        reply = client._send(client._query_stream, "connection_request").result(timeout=timeout)
    except Exception:  # noqa: BLE001 - no answer (a stalled hub, a closed client): nothing learnt
        return
    known = engine_identities(client)
    for engine, uuid in sorted(((reply.get("content") or {}).get("engines") or {}).items()):
        if int(engine) not in known:
            client._register_engine({"content": {"id": int(engine), "uuid": uuid}})


def client_config(client: Any) -> dict[str, Any]:
    """The client's connection information (``Client._config``)."""
    return client._config


def engine_ids(client: Any, targets: Any) -> list[int]:
    """*targets* as ``%px`` takes them, resolved to engine ids (``Client._build_targets``)."""
    return client._build_targets(targets)[1]


def end_output(client: Any, msg_id: str) -> None:
    """Count the output of the finished call *msg_id* as complete (``Client._output_futures``: what
    waits for the engine's idle status, which a relayed call does not publish)."""
    output = client._output_futures.pop(msg_id, None)
    if output is not None and not output.done():
        output.set_result(None)


# ------------------------------------------------------------------------ in the ranks' engines
def kernel_bound(engine: Any) -> bool:
    """Whether *engine*'s kernel listens for Jupyter clients already (``IPEngine._kernel_bound``)."""
    return bool(engine._kernel_bound)


_filtered: set[int] = set()  # ids of the kernels whose statuses are filtered (one per engine process)


def filter_statuses(kernel: Any, publish: Callable[[dict | None, str], bool]) -> None:
    """From now on, *kernel* publishes a busy/idle status only when ``publish(parent, channel)``
    holds (*parent*: the request's message, or ``None``) — by replacing ``Kernel._publish_status``
    on the instance. Idempotent: the first filter stays."""
    if id(kernel) in _filtered:
        return
    original = kernel._publish_status

    def publish_filtered(status, channel, parent=None):
        if publish(parent or kernel.get_parent(channel), channel):
            original(status, channel, parent)

    kernel._publish_status = publish_filtered
    _filtered.add(id(kernel))


# ------------------------------------------------------------------------ IPython
def show_traceback(shell: Any, etype: type, value: BaseException, stb: list[str]) -> None:
    """Show *stb* as the cell's traceback (``InteractiveShell._showtraceback``: what a custom
    exception handler calls to display its text)."""
    shell._showtraceback(etype, value, stb)


def main() -> int:
    gone = moved()
    for line in gone:
        print(line)
    if not gone:
        print(f"all {len(HOOKS)} private names the runtime uses are where it expects them, and the "
              f"{len(PATCHED)} objects it patches in place")
    return 1 if gone else 0


if __name__ == "__main__":
    sys.exit(main())
