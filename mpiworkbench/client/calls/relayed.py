"""The notebook's side of a call on every rank: one message out, one reply back, whatever the
world's size. The call goes to rank 0's engine (:func:`relay_view`), which hands it to the other
ranks and returns every rank's outcome in one reply (:mod:`mpiworkbench.client.ranks.relay`, where
what runs on each rank lives: :func:`~mpiworkbench.client.ranks.relay.call` and
:func:`~mpiworkbench.client.ranks.relay.run_cell`, which never raise but return
``(rank, outcome…)``, the rank's output captured with it instead of streamed over IOPub).

Here: ``Executor.submit`` (with ``relayed=True``) sends it through :func:`relay_view`, and
:func:`end` ends it in the client when the reply has come; :func:`wait` waits for the reply, and
on a timeout says which ranks had finished (what rank 0 published, and a probe of the others) and
which had failed (what they published at once); :func:`statuses` and :func:`outputs` read the
reply in rank order (``Executor.gather`` its values). The same works through ipyparallel's coalescing broadcast view
(``client.broadcast_view(is_coalescing=True)``: the controller fans the call out and gathers the
replies into one), which ``benchmarks/control_plane.py`` compares; a rank's failure there sends no
buffers, which is why a rank never raises but returns its outcome.
"""

from __future__ import annotations

import time
from operator import itemgetter
from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.client.ranks import relay
from mpiworkbench.client.history import drop
from mpiworkbench.client.errors import ExecutionTimeout, RankStatus
from mpiworkbench.client.calls.output import RankOutput


# ---------------------------------------------------------------------- in the notebook
def relay_view(client, engine: int):
    """The view of rank 0's *engine* that relayed calls are sent through (labelled :data:`~mpiworkbench.client.ranks.relay.LABEL`).
    The relay must be open: :func:`~mpiworkbench.client.ranks.relay.open_relay` on every rank."""
    found = client[engine]
    found.label = relay.LABEL
    return found


def end(client, ar) -> None:
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
                                                                  relay.FAILED_KEY)}


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
    ar = dview.apply_async(relay.last_finished)
    ar.add_done_callback(lambda _f: drop(ar, (dview.client.history, dview.history)))
    ar.wait(PROBE_S)
    done = set()
    for engine, part in zip(upstream.targets(ar), ar.split()):
        if part.done() and part.exception() is None and part.get()[0] == msg_id and part.get()[1] <= by:
            done.add(ranks.get(engine, engine))
    return done


def statuses(ar, ranks: dict[int, int]) -> list[RankStatus]:
    """Each rank's outcome of a finished :func:`call` broadcast, in rank order."""
    engine_of = {rank: engine for engine, rank in ranks.items()}
    return [RankStatus(r[0], engine_of.get(r[0], r[0]), "failed", r[2], r[3]) if r[1] == "failed"
            else RankStatus(r[0], engine_of.get(r[0], r[0]), "ok") for r in sorted(ar.get(), key=itemgetter(0))]


def outputs(ar, ranks: dict[int, int]) -> list[RankOutput]:
    """The per-rank outputs of a finished :func:`run_cell` broadcast, in rank order."""
    found = []
    for status, reply in zip(statuses(ar, ranks), sorted(ar.get(), key=itemgetter(0))):
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
