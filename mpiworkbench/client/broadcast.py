"""One message out, one reply back: a call on every rank whose cost to the notebook does not
grow with the world.

Through a :class:`~ipyparallel.DirectView` a call on *n* ranks is *n* requests from the client and
*n* replies back, plus each engine's IOPub traffic (busy, idle, its output): the notebook's
process handles O(n) messages per call. Through ipyparallel's broadcast view with coalescing
replies (``client.broadcast_view(is_coalescing=True)``) the client sends one request; the
controller's broadcast schedulers fan it out and gather the engines' replies into one.

Coalescing has two limits, both handled here: ipyparallel concatenates the replies' buffers
(a rank that raised sends none, so one error would corrupt the whole reply), and ``execute`` is
not coalescing at all. So what runs on each rank is :func:`call` or :func:`run_cell`, which never
raise: they return ``(rank, outcome…)``, the rank's output captured with it instead of streamed
over IOPub, and :func:`results` turns the coalesced list back into rank order, raising the
grouped :class:`~mpiworkbench.client.errors.RankFailure` when some ranks raised.

What a coalesced call cannot tell while it runs is which ranks have finished: the reply comes
when every rank has answered. See :func:`wait` for what a timeout then reports.
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

from mpiworkbench.client import relay, upstream
from mpiworkbench.client.caches import forget as forget_history
from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus
from mpiworkbench.client.output import RankOutput
from mpiworkbench.core import mpi


#: The data key under which a rank publishes its failure at once (see :func:`wait`).
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
    relayed by rank 0 (:mod:`~mpiworkbench.client.relay`), rank 0's included. Other calls keep
    their statuses (``%px``'s output waits for the idle one). Idempotent
    (:func:`~mpiworkbench.client.upstream.filter_statuses`)."""
    kernel = getattr(_shell(), "kernel", None)
    if kernel is not None:
        upstream.filter_statuses(kernel, _not_coalesced)


def _not_coalesced(parent: dict | None, channel: str) -> bool:
    metadata = (parent or {}).get("metadata") or {}
    return not (metadata.get("is_coalescing") or metadata.get("label") == relay.LABEL)


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


# ---------------------------------------------------------------------- in the notebook
def view(client, targets: list[int]):
    """A coalescing broadcast view of *targets* (the engines in rank order)."""
    return client.broadcast_view(targets=targets, is_coalescing=True)


def apply(bview, func: Callable[..., Any], *args: Any):
    """Submit ``func(*args)`` through *bview*, one message: :func:`call` or :func:`run_cell` on
    a coalescing broadcast view (:func:`view`), or :func:`relay.fan_out` of them on rank 0's
    relay view (:func:`relay.view`), which hands them to the other ranks. The result is marked
    (``_wb_broadcast``) for the waits that read it, and ended in the client when it finishes
    (:func:`forget`)."""
    ar = bview.apply_async(func, *args)
    ar._wb_broadcast, ar._wb_view = True, bview
    client = bview.client
    ar.add_done_callback(lambda _f: forget(client, ar))
    return ar


def forget(client, ar) -> None:
    """End the finished coalesced call *ar* in the client: its output is complete (the ranks'
    output came in the reply), which ipyparallel learns otherwise from each engine's idle status
    (not sent for coalesced calls, :func:`quiet_statuses`) — so its metadata is dropped as for any
    finished call; and drop what the engines' copies of the call left in the client's metadata
    (failure notices, output written below Python) under ids ipyparallel does not know."""
    for msg_id in getattr(ar, "msg_ids", ()):
        upstream.end_output(client, msg_id)
    for key in copies(client, ar):
        client.metadata.pop(key, None)


def failures(client, ar) -> dict[int, dict[str, Any]]:
    """Rank → the failure it published during the call *ar* (before the reply: each rank's copy
    of the request has an id that extends the call's own, and a relayed call's rank 0 runs the
    request itself; the client's I/O thread takes them in as they come)."""
    return {int(notice["rank"]): notice for notice in _published(client, [*getattr(ar, "msg_ids", ()), *copies(client, ar)],
                                                                  FAILED_KEY)}


def _published(client, msg_ids, key: str) -> list:
    """What the ranks published under the data *key* for the requests *msg_ids*, as the client's
    I/O thread has taken it in so far (IOPub ``data_pub``, kept in the client's metadata)."""
    found = ((client.metadata.get(msg_id) or {}).get("data") or {} for msg_id in msg_ids)
    return [data[key] for data in found if data.get(key) is not None]


def copies(client, ar) -> list[str]:
    """The client's metadata keys of the engines' copies of the coalesced call *ar*."""
    prefixes = tuple(f"{msg_id}_" for msg_id in getattr(ar, "msg_ids", ()))
    if not prefixes:  # not a call (an execution's stand-in): no copies to look for
        return []
    while True:
        try:  # the client's I/O thread may add a key meanwhile: read again
            return [key for key in list(client.metadata) if str(key).startswith(prefixes)]
        except RuntimeError:
            continue


def wait(client, ar, ranks: dict[int, int], timeout: float | None, grace: float, started: float | None = None,
         probe=None, poll_s: float = 0.05) -> None:
    """Wait for the coalesced reply of *ar*: until it comes, *timeout* seconds pass, or *grace*
    seconds after a rank published a failure (the others are then most likely blocked in a
    collective it never joined). Raises :class:`ExecutionTimeout` with the ranks that published
    a failure as failed; of the others, those that answer a probe through the DirectView *probe*
    within :data:`PROBE_S` saying they finished this call as finished, the rest as still running
    (the probe is one message per rank, sent only when a call did not end in time).
    *started*: ``time.monotonic()`` when the wait began, if earlier (the timeout counts from then)."""
    start = time.monotonic() if started is None else started
    failed_at = None
    while not ar.wait(poll_s):
        now = time.monotonic()
        if failed_at is None and failures(client, ar):
            failed_at = now
        if (timeout is not None and now - start >= timeout) or (failed_at is not None and now - failed_at >= grace):
            break
    else:
        return
    waited = time.monotonic() - start
    failed = failures(client, ar)
    gave_up = time.time()
    done = finished_ranks(probe, ranks, ar.msg_ids[0], gave_up) if probe is not None else set()
    # rank 0 of a relayed call cannot answer the probe (it waits for the others): it said who finished
    done.update(*_published(client, ar.msg_ids, relay.PROGRESS_KEY))
    statuses = [RankStatus(rank, engine, "failed", failed[rank]["error"], failed[rank]["traceback"]) if rank in failed
                else RankStatus(rank, engine, "ok" if rank in done else "running") for engine, rank in ranks.items()]
    raise ExecutionTimeout(statuses, detail=f"(waited {waited:.1f} s, timeout {timeout} s)")


#: Seconds a probe waits for the ranks that finished a call that did not end in time.
PROBE_S = 1.0


def finished_ranks(dview, ranks: dict[int, int], msg_id: str, by: float) -> set[int]:
    """The ranks whose engines answer within :data:`PROBE_S` that the last coalesced call they
    finished is *msg_id*, finished by *by* (epoch seconds: when the wait gave up). A rank blocked
    in it cannot answer (its probe waits in its queue); one still computing at *by* answers once
    done, and counts as running then."""
    ar = dview.apply_async(last_finished)
    ar.add_done_callback(lambda _f: forget_history(ar, (dview.client.history, dview.history)))
    ar.wait(PROBE_S)
    done = set()
    for engine, part in zip(upstream.targets(ar), ar.split()):
        if part.done() and part.exception() is None and part.get()[0] == msg_id and part.get()[1] <= by:
            done.add(ranks.get(engine, engine))
    return done


def _sorted(replies: list[tuple]) -> list[tuple]:
    return sorted(replies, key=lambda reply: reply[0])


def statuses(ar, ranks: dict[int, int]) -> list[RankStatus]:
    """Each rank's outcome of a finished :func:`call` broadcast, in rank order."""
    engine_of = {rank: engine for engine, rank in ranks.items()}
    return [RankStatus(r[0], engine_of.get(r[0], r[0]), "failed", r[2], r[3]) if r[1] == "failed"
            else RankStatus(r[0], engine_of.get(r[0], r[0]), "ok") for r in _sorted(ar.get())]


def results(ar) -> list[Any]:
    """The values of a finished :func:`call` broadcast that failed nowhere, in rank order."""
    return [reply[2] for reply in _sorted(ar.get())]


def outputs(ar, ranks: dict[int, int]) -> list[RankOutput]:
    """The per-rank outputs of a finished :func:`run_cell` broadcast, in rank order."""
    found = []
    for status, reply in zip(statuses(ar, ranks), _sorted(ar.get())):
        stdout, stderr, result = reply[-1]
        found.append(RankOutput(status.rank, stdout, stderr, result, status if status.state == "failed" else None))
    return found


class MessageCounter:
    """Counts the messages a client's session sends (``Session.send``) and takes in
    (``Session.feed_identities``: replies, IOPub, notifications) from now on, by wrapping the two
    methods on the session object (measurement: the control-plane benchmark and its test)."""

    def __init__(self, session):
        self.sent = self.received = 0
        send, feed = session.send, session.feed_identities

        def counted_send(*args, **kwargs):
            self.sent += 1
            return send(*args, **kwargs)

        def counted_feed(*args, **kwargs):
            self.received += 1
            return feed(*args, **kwargs)

        session.send, session.feed_identities = counted_send, counted_feed

    def wait_quiet(self, quiet_s: float = 0.3, limit_s: float = 30.0, poll_s: float = 0.02) -> bool:
        """Wait until no message has come in for *quiet_s* seconds (what arrives late for calls
        already returned: a DirectView's idle statuses), at most *limit_s*; whether it did."""
        deadline = time.monotonic() + limit_s
        last, since = self.received, time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(poll_s)
            if self.received != last:
                last, since = self.received, time.monotonic()
            elif time.monotonic() - since >= quiet_s:
                return True
        return False
