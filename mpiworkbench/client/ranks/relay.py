"""A call on every rank that costs the notebook one request and one reply, whatever the
world's size: it is sent to rank 0's engine alone, and rank 0 hands it to the other ranks.

Through ipyparallel's coalescing broadcast view (the controller fans a call out and gathers the
replies into one) the notebook still does work for every engine: the reply carries *n* result
buffers to deserialize, and ipyparallel's client keeps per-engine bookkeeping for the request
and its reply. Measured with ``benchmarks/control_plane.py``: about 1 ms more client CPU per
call at 64 engines than at 2, where a call to one engine costs the same at both sizes.

So the call goes to rank 0's engine (an ordinary one-engine request), which runs
:func:`fan_out`: it sends the same request to every other rank's kernel through a socket of its
own (the *relay*, a ZeroMQ ``ROUTER`` each other rank's shell socket is connected to, opened once
per world by :func:`open_relay`), runs its own part, takes in the others' replies and returns
every rank's outcome in one list. The other ranks run the call as any request from the
controller: in their kernel's main thread, in order with their other requests, where ``%px``
state and the debugger live. The messages are the kernels' own (signed with the cluster's key,
checked by the receiving kernel), and the relay listens on the address rank 0 reaches the
controller from: loopback when the controller listens there; on a cluster encrypted with
CurveZMQ the relay is too, with a key of its own that only the ranks learn (through MPI).

Each rank's copy of a call has the id ``<call id>_<rank>`` and carries the call's id as
``original_msg_id`` (as the controller's broadcast copies do), so that a rank's failure notice
and the probe of a call that did not end in time read the same as through the controller. While
the call is not over after :data:`PROGRESS_S`, rank 0 publishes which ranks have finished
(:data:`PROGRESS_KEY`): the probe cannot ask rank 0 itself, whose kernel is busy waiting for the
others.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import linecache
import sys
import time
import traceback
from typing import Any, Callable

import zmq
from ipyparallel import serialize

from mpiworkbench.client import upstream
from mpiworkbench.core import mpi
from mpiworkbench.core.addresses import own_address

#: The label of the request sent to rank 0 (ipyparallel's request metadata), by which rank 0's
#: kernel knows it as a relayed call (it publishes no busy/idle status for it).
LABEL = "mpiworkbench-relay"
#: The relay socket's ZeroMQ identity: what the other ranks' kernels address their replies to.
IDENTITY = b"mpiworkbench-relay"
#: The data key of rank 0's progress notice: the ranks that have finished the call so far.
PROGRESS_KEY = "mpiworkbench_relay_finished"
#: Seconds a call runs before rank 0 first says which ranks have finished it (then again at most
#: this often, while replies come in).
PROGRESS_S = 0.5
#: Seconds rank 0 waits for a rank's shell socket to be connected to the relay when it first
#: sends to it (a connection on loopback is made in well under a millisecond).
CONNECT_S = 30.0

#: On an engine: the relay as this process knows it (``address``; on rank 0 also ``socket`` and
#: ``peers``, ``[(rank, kernel identity)]`` of the other ranks).
_relay: dict[str, Any] = {}


# ---------------------------------------------------------------------- on the engines
def _kernel():
    from IPython import get_ipython  # lazy: only engines run this

    return get_ipython().kernel


def open_relay() -> str | None:
    """On every rank of the world at once (it meets the others): rank 0 opens its relay socket,
    every other rank connects its kernel's shell socket to it. Idempotent (several notebooks may
    share the world: each opens it once). Returns the relay's address (None in a world of one rank)."""
    kernel = _kernel()
    comm = mpi.world().Dup()  # (its own communicator: nothing of the user's in flight can match)
    try:
        rank = comm.Get_rank()
        if rank == 0 and comm.Get_size() > 1 and "address" not in _relay:  # (one rank: nobody to hand to)
            relay = zmq.Context.instance().socket(zmq.ROUTER)
            relay.setsockopt(zmq.IDENTITY, IDENTITY)
            relay.setsockopt(zmq.ROUTER_MANDATORY, 1)  # a send to a rank not yet connected fails, not vanishes
            relay.setsockopt(zmq.LINGER, 0)
            if getattr(kernel.parent, "curve_serverkey", None):  # the cluster is encrypted: so is the relay
                relay.curve_publickey, relay.curve_secretkey = public, secret = zmq.curve_keypair()
                relay.curve_server = True
                _relay["key"] = public
            host = own_address(kernel.parent.registration_url)  # (the engine application's: where the controller is)
            port = relay.bind_to_random_port(f"tcp://{host}")
            _relay.update(address=f"tcp://{host}:{port}", socket=relay)
        address, key = comm.bcast((_relay.get("address"), _relay.get("key")), root=0)
        idents = comm.gather(kernel.ident.encode(), root=0)
        if rank == 0:
            _relay["peers"] = list(enumerate(idents))[1:]
        elif _relay.get("address") != address:
            _connect(kernel, address, key)
            _relay["address"] = address
        return address
    finally:
        comm.Free()


def _connect(kernel, address: str, key: bytes | None) -> None:
    """Connect the kernel's shell socket to the relay at *address*; on an encrypted cluster as a
    CurveZMQ client of the relay's public *key* (known only to the ranks: MPI gave it to them).
    The socket's server key is the controller's for its other connections (the engine's, as
    ipyparallel's engine sets it before each of its connections): it is set for this connection
    only (libzmq takes a connection's options when it is made) and put back."""
    shell = kernel.shell_stream.socket
    if key is None:
        shell.connect(address)
        return
    controller_key = getattr(kernel.parent, "curve_serverkey", None)  # (the engine application's)
    if not controller_key:
        raise RuntimeError("an encrypted cluster's engine without the controller's key (IPEngine.curve_serverkey): "
                           "this rank cannot take rank 0's calls; start the cluster with the workbench")
    shell.setsockopt(zmq.CURVE_SERVERKEY, key)
    try:
        shell.connect(address)
    finally:
        shell.setsockopt(zmq.CURVE_SERVERKEY, controller_key)


def fan_out(runner: Callable[..., tuple], *args: Any) -> list[tuple]:
    """On rank 0, as the request the notebook sent it: send ``runner(*args)`` to every other
    rank, run it here, and return every rank's outcome (``(rank, ...)`` as *runner* returns it:
    :func:`~mpiworkbench.client.calls.relayed.call` or :func:`~mpiworkbench.client.calls.relayed.run_cell`,
    which never raise), rank 0's first."""
    kernel = _kernel()
    relay, peers = _relay.get("socket"), _relay.get("peers", [])
    header = (kernel.get_parent("shell") or {}).get("header") or {}
    call_id = header.get("msg_id", "")
    expected = {}
    if peers:
        buffers = serialize.pack_apply_message(runner, args, {})
        for rank, ident in peers:
            msg = kernel.session.msg("apply_request", content={},
                                     metadata={"original_msg_id": call_id, "label": LABEL})
            msg["header"]["msg_id"] = msg["msg_id"] = f"{call_id}_{rank}"
            # the notebook's session, not rank 0's: what a rank publishes while it runs its copy
            # (IOPub: a failure notice, its in-flight report when blocked) carries the copy's
            # header as its parent, and a client takes in only what answers its own session —
            # with rank 0's, the report of a rank on another host never reached the notebook
            msg["header"]["session"] = header.get("session", msg["header"]["session"])
            _send(kernel.session, relay, msg, ident, buffers)
            expected[msg["msg_id"]] = rank
    started = time.monotonic()
    mine = runner(*args)
    return [mine, *_replies(kernel, relay, expected, started)]


def _send(session, relay, msg: dict, ident: bytes, buffers: list) -> None:
    """Send *msg* to the kernel *ident*, waiting (at most :data:`CONNECT_S`) for its connection
    to the relay, made by :func:`open_relay`, if it is not made yet."""
    deadline = time.monotonic() + CONNECT_S
    while True:
        try:
            session.send(relay, msg, ident=ident, buffers=buffers)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EHOSTUNREACH or time.monotonic() > deadline:
                raise RuntimeError(f"rank 0 could not reach the kernel {ident.decode()!r} through its relay "
                                   f"({_relay.get('address')}): {exc}; restart the world (wb.restart())") from exc
            time.sleep(0.001)  # the connection is being made: poll for it, bounded by the deadline


def _replies(kernel, relay, expected: dict[str, int], started: float) -> list[tuple]:
    """The other ranks' outcomes, in rank order, as their replies come in (a reply of an earlier
    call rank 0 gave up on, interrupted, is dropped). While the call runs longer than
    :data:`PROGRESS_S`, the ranks finished so far are published (:data:`PROGRESS_KEY`)."""
    outcomes: dict[int, tuple] = {}
    told, told_at = -1, started
    while len(outcomes) < len(expected):
        now = time.monotonic()
        if now - told_at >= PROGRESS_S and len(outcomes) != told:
            _progress(kernel, [0, *sorted(outcomes)])
            told, told_at = len(outcomes), now
        if not relay.poll(int(PROGRESS_S * 1000)):
            continue
        idents, frames = kernel.session.feed_identities(relay.recv_multipart(copy=False), copy=False)
        try:
            msg = kernel.session.deserialize(frames, content=True, copy=False)
        except Exception:  # not signed with the cluster's key: not a rank's reply
            kernel.log.warning("relay: dropped a message that is not a signed reply", exc_info=True)
            continue
        rank = expected.get((msg.get("parent_header") or {}).get("msg_id"))
        if rank is not None:
            outcomes[rank] = _outcome(rank, msg)
    return [outcomes[rank] for rank in sorted(outcomes)]


def _outcome(rank: int, msg: dict) -> tuple:
    """A rank's outcome from its kernel's reply: what the runner returned, or, when the kernel
    itself reported an error (the runner never raises, but ``SystemExit`` or an abort reach
    the kernel), the runner's failed shape with an empty output."""
    content = msg["content"]
    if content.get("status") == "ok":
        return serialize.deserialize_object(msg["buffers"])[0]
    error = f"{content.get('ename', 'Error')}: {content.get('evalue', content.get('status', ''))}"
    return rank, "failed", error, list(content.get("traceback") or [error]), ("", "", "")


def _progress(kernel, finished: list[int]) -> None:
    kernel.shell.data_pub.publish_data({PROGRESS_KEY: finished})


#: The data key under which a rank publishes its failure at once (see :func:`mpiworkbench.client.calls.relayed.wait`).
FAILED_KEY = "mpiworkbench_failed"


# ---------------------------------------------------------------------- on the engines
def _rank() -> int:
    return mpi.world().Get_rank()  # (core.mpi imports mpi4py only when called: on a rank)


def _failure(exc: BaseException) -> tuple[str, list[str]]:
    """The rank's error line and traceback; the exception is kept where ``wb.post_mortem`` and
    IPython look for the last one (``sys.last_value``), and the failure is published at once
    (one IOPub message, from this rank only), so that the notebook need not wait for ranks
    blocked in a collective this rank will never join."""
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, exc.__traceback__
    lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip("\n").split("\n")
    error = f"{type(exc).__name__}: {exc}"
    shell = _shell()
    with contextlib.suppress(Exception):  # the notice is a shortcut: the reply says it anyway
        shell.data_pub.publish_data({FAILED_KEY: {"rank": _rank(), "error": error, "traceback": lines}})
    return error, lines


def _shell():
    from IPython import get_ipython  # lazy: only engines run this

    return get_ipython()


def quiet_statuses() -> None:
    """On an engine: publish no busy/idle status for coalesced calls. The kernel announces every
    request twice on IOPub, and every client takes in every announcement: 2n messages a call
    the notebook has no use for (its coalesced reply says when the call ended); nor for a call
    relayed by rank 0 (:mod:`~mpiworkbench.client.ranks.relay`), rank 0's included. Other calls keep
    their statuses (``%px``'s output waits for the idle one). Idempotent
    (:func:`~mpiworkbench.client.upstream.filter_statuses`)."""
    kernel = getattr(_shell(), "kernel", None)
    if kernel is not None:
        upstream.filter_statuses(kernel, _not_coalesced)


def _not_coalesced(parent: dict | None, channel: str) -> bool:
    metadata = (parent or {}).get("metadata") or {}
    return not (metadata.get("is_coalescing") or metadata.get("label") == LABEL)


def call(func: Callable[..., Any], args: tuple, kwargs: dict) -> tuple:
    """On a rank: ``func(*args, **kwargs)`` as ``(rank, "ok", value)`` or
    ``(rank, "failed", error, traceback_lines)``; never raises."""
    quiet_statuses()
    rank = _rank()
    try:
        return rank, "ok", func(*args, **kwargs)
    except Exception as exc:
        return (rank, "failed", *_failure(exc))
    finally:
        _finished_here()


_last_finished: list[tuple[str, float]] = [("", 0.0)]


def _finished_here() -> None:
    """Remember the id of the call this engine has just finished (the coalesced or relayed
    call's own id, not its copy's), and when (epoch seconds: see :func:`last_finished`)."""
    kernel = getattr(_shell(), "kernel", None)
    parent = (kernel.get_parent("shell") if kernel is not None else None) or {}
    call_id = (parent.get("metadata") or {}).get("original_msg_id") or (parent.get("header") or {}).get("msg_id", "")
    _last_finished[0] = (call_id, time.time())


def last_finished() -> tuple[str, float]:
    """On an engine: the id of the last coalesced call it finished and when, in epoch seconds
    (what a probe asks)."""
    return _last_finished[0]


def run_cell(code: str) -> tuple:
    """On a rank: run *code* in the engine's namespace as ``%%px`` does (IPython's syntax, the
    last expression's value as ``Out``), with its stdout and stderr captured, not streamed:
    ``(rank, "ok", output)`` or ``(rank, "failed", error, traceback_lines, output)`` as :func:`call`,
    *output* being ``(stdout, stderr, result_text)``; never raises."""
    quiet_statuses()
    rank, out, err = _rank(), io.StringIO(), io.StringIO()
    shell = _shell()
    namespace = shell.user_ns if shell is not None else {}
    error, lines, result = "", [], ""
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            source = shell.transform_cell(code) if shell is not None else code
            name = f"<%%px cell {hashlib.sha1(source.encode()).hexdigest()[:8]}>"
            linecache.cache[name] = (len(source), None, source.splitlines(True), name)  # tracebacks show the lines
            tree = ast.parse(source, name)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, name, "exec"), namespace)  # noqa: S102 - what %%px is for
            if last is not None:
                value = eval(compile(ast.Expression(last.value), name, "eval"), namespace)  # noqa: S307
                result = "" if value is None else repr(value)
        except Exception as exc:
            error, lines = _failure(exc)
    _finished_here()
    output = (out.getvalue(), err.getvalue(), result)
    return (rank, "failed", error, lines, output) if error else (rank, "ok", output)
