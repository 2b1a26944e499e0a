"""A rank's kernel reached through the controller: a Jupyter kernel connection on loopback,
carried over the cluster's own (signed, and encrypted with CurveZMQ where the cluster is) channels.

Why: Jupyter clients (JupyterLab, its Debugger sidebar, ``jupyter console``,
:class:`~mpiworkbench.client.calls.rank_debugger.RankDebugger`) speak the kernel protocol over plain
ZeroMQ, signed with an HMAC key. A cluster whose engines run on other hosts encrypts its traffic
with CurveZMQ, and signs with no key; a rank's kernel bound for Jupyter clients there
(ipyparallel's ``bind_kernel``) would listen, unencrypted and unsigned, on the network. Instead,
the notebook's process binds the kernel's five sockets on loopback, with a key of its own (the
connection file, mode 0600, holds it), and passes every message to and from the rank through the
controller, as any ipyparallel client's messages go:

* shell → the controller's ``mux`` queue, control → its ``control`` queue (through the engine's
  nanny), each addressed to the rank's engine; the replies come back the same way and go to the
  Jupyter client that asked;
* the rank's IOPub (its ``engine.<id>.*`` messages, ``debug_event`` among them) → the loopback
  IOPub;
* heartbeats are answered here (the proxy is alive; the rank's own life is the controller's to
  watch); stdin is bound and unused (engines read no input).

Messages are checked against one session's key and signed anew with the other's, unchanged
otherwise (ids, parents, buffers). The proxy also notes the rank's debugger stops and continues
from the ``debug_event`` messages it passes on, in the form of :mod:`mpiworkbench.trace.stops`'
records: the client reads a rank on another host as stopped, not hung, from there.
"""

from __future__ import annotations

import collections
import secrets
import threading
import time
from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.core.threads import start_daemon
from mpiworkbench.trace.stops import KEPT_PAUSES, WHERE_KEY

#: Requests remembered while their reply is awaited (an unanswered one is forgotten after this many newer).
PENDING = 4096
#: Seconds the proxy's loop waits for a message before it looks whether it is asked to stop.
POLL_S = 0.2


class KernelProxy:
    """One rank's kernel on loopback, its messages carried through the controller (see the module): its
    sockets, bound and connected here; :class:`Proxies` moves its messages."""

    def __init__(self, context, client, engine: int, rank: int, kernel_name: str = "python3"):
        import zmq
        from ipyparallel import util
        from jupyter_client.session import Session

        self.rank = rank
        self.engine = engine
        self._target = upstream.engine_identities(client)[engine].encode("utf8")
        self._down_session = Session(key=secrets.token_hex(32).encode(), signature_scheme="hmac-sha256",
                                     username="mpiworkbench")
        theirs = client.session
        self._up_session = Session(key=theirs.key, signature_scheme=theirs.signature_scheme,
                                   packer=theirs.packer, unpacker=theirs.unpacker, username="mpiworkbench")
        config = upstream.client_config(client)
        curve = dict(curve_serverkey=client.curve_serverkey, curve_publickey=client.curve_publickey,
                     curve_secretkey=client.curve_secretkey)
        self.down: dict[str, Any] = {}
        self.up: dict[str, Any] = {}
        ports = {}
        try:
            for channel, kind in (("shell", zmq.ROUTER), ("control", zmq.ROUTER), ("stdin", zmq.ROUTER),
                                  ("iopub", zmq.PUB), ("hb", zmq.REP)):
                sock = self.down[channel] = context.socket(kind)
                sock.linger = 0
                ports[f"{channel}_port"] = sock.bind_to_random_port("tcp://127.0.0.1")
            for channel, url in (("shell", config["mux"]), ("control", config["control"])):
                sock = self.up[channel] = context.socket(zmq.DEALER)
                sock.linger = 0
                util.connect(sock, url, **curve)
            iopub = self.up["iopub"] = context.socket(zmq.SUB)
            iopub.linger = 0
            iopub.setsockopt(zmq.SUBSCRIBE, f"engine.{engine}.".encode())
            util.connect(iopub, config["iopub"], **curve)
        except BaseException:
            self.close()
            raise
        self.info = {**ports, "ip": "127.0.0.1", "transport": "tcp", "key": self._down_session.key.decode(),
                     "signature_scheme": "hmac-sha256", "kernel_name": kernel_name}
        self._pending: collections.OrderedDict[str, tuple[str, list[bytes]]] = collections.OrderedDict()
        self._lock = threading.Lock()
        self._stop: dict[str, Any] = {"stopped_since": None, "where": None, "reason": None, "pauses": []}
        self.dropped = 0  # messages refused (bad signature) or not understood
        self.closed = False

    def stop_record(self) -> dict[str, Any]:
        """The rank's stops and continues seen so far, as :mod:`mpiworkbench.trace.stops` records
        them (``time.monotonic()`` of this process; where, as the rank's kernel said in the event)."""
        with self._lock:
            return {**self._stop, "pauses": list(self._stop["pauses"])}

    def handlers(self) -> dict[Any, Any]:
        """Socket → what to do when a message is there (for :class:`Proxies`' poller)."""
        found = {self.down[c]: (self._from_client, c) for c in ("shell", "control", "stdin")}
        found.update({self.up[c]: (self._from_rank, c) for c in ("shell", "control")})
        found[self.up["iopub"]] = (self._published, "iopub")
        found[self.down["hb"]] = (self._heartbeat, "hb")
        return found

    def close(self) -> None:
        self.closed = True
        for sock in [*self.down.values(), *self.up.values()]:
            sock.close(0)

    # ------------------------------------------------------------------ the messages
    def _from_client(self, sock, channel: str) -> None:
        """A Jupyter client's request: checked against the loopback key, sent on to the rank."""
        raw = sock.recv_multipart(copy=False)
        idents, frames = self._down_session.feed_identities(raw, copy=False)
        msg = self._down_session.deserialize(frames, content=True, copy=False)  # (checks the signature)
        if channel == "stdin":  # engines read no input: nothing asked for it
            return
        with self._lock:
            self._pending[msg["header"]["msg_id"]] = (channel, idents)
            while len(self._pending) > PENDING:
                self._pending.popitem(last=False)
        self._up_session.send(self.up[channel], msg, ident=[self._target], buffers=msg.get("buffers") or None)

    def _from_rank(self, sock, channel: str) -> None:
        """The rank's reply: to the Jupyter client that sent the request."""
        raw = sock.recv_multipart(copy=False)
        _idents, frames = self._up_session.feed_identities(raw, copy=False)
        msg = self._up_session.deserialize(frames, content=True, copy=False)
        with self._lock:
            asked = self._pending.pop(msg["parent_header"].get("msg_id"), None)
        if asked is None:
            return  # a reply to a request this proxy did not send (or long forgotten)
        self._down_session.send(self.down[asked[0]], msg, ident=asked[1], buffers=msg.get("buffers") or None)

    def _published(self, sock, _channel: str) -> None:
        raw = sock.recv_multipart(copy=False)
        topic, frames = self._up_session.feed_identities(raw, copy=False)
        msg = self._up_session.deserialize(frames, content=True, copy=False)
        if msg["header"]["msg_type"] == "debug_event":
            self._note(msg["content"])
        self._down_session.send(self.down["iopub"], msg, ident=topic, buffers=msg.get("buffers") or None)

    def _heartbeat(self, sock, _channel: str) -> None:
        sock.send_multipart(sock.recv_multipart())

    def _note(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        now = time.monotonic()
        with self._lock:
            if kind == "stopped":
                if self._stop["stopped_since"] is None:
                    self._stop["stopped_since"] = now
                body = event.get("body") or {}
                self._stop["reason"] = body.get("reason")
                self._stop["where"] = body.get(WHERE_KEY)
            elif kind == "continued" and self._stop["stopped_since"] is not None:
                self._stop["pauses"] = [*self._stop["pauses"][-(KEPT_PAUSES - 1):], [self._stop["stopped_since"], now]]
                self._stop["stopped_since"] = None


class Proxies:
    """The proxies of one session's ranks: one ZeroMQ context and one thread for all of them,
    however many ranks are opened."""

    def __init__(self, client):
        import zmq

        self.client = client
        self.context = zmq.Context()
        self.ranks: dict[int, KernelProxy] = {}
        self._added: list[KernelProxy] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = start_daemon(self._loop, "mpiworkbench-kernel-proxies")

    def open(self, rank: int, engine: int) -> KernelProxy:
        """*rank*'s proxy, started the first time it is asked for."""
        with self._lock:
            proxy = self.ranks.get(rank)
            if proxy is None or proxy.engine != engine:
                # bound and connected here; from now on only the proxies' thread uses its sockets
                proxy = self.ranks[rank] = KernelProxy(self.context, self.client, engine, rank)
                self._added.append(proxy)
        return proxy

    def close(self, timeout: float = 10.0) -> None:
        """Stop passing messages on and close every socket (Jupyter clients see the kernels gone)."""
        self._stopping.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        import zmq

        poller = zmq.Poller()
        handlers: dict[Any, Any] = {}
        proxies: list[KernelProxy] = []
        try:
            while not self._stopping.is_set():
                if self._added:  # (only open() adds: a proxy new, or replacing one of a restarted world)
                    with self._lock:
                        added, self._added = self._added, []
                        current = set(self.ranks.values())
                    for proxy in [r for r in proxies if r not in current]:
                        proxies.remove(proxy)
                        for sock in proxy.handlers():
                            poller.unregister(sock)
                            handlers.pop(sock, None)
                        proxy.close()
                    for proxy in added:
                        proxies.append(proxy)
                        for sock, handler in proxy.handlers().items():
                            handlers[sock] = (proxy, *handler)
                            poller.register(sock, zmq.POLLIN)
                for sock, _ in poller.poll(POLL_S * 1000):
                    proxy, handle, channel = handlers[sock]
                    try:
                        handle(sock, channel)
                    except Exception:  # noqa: BLE001 - one bad message must not end the proxy
                        proxy.dropped += 1
        finally:
            for proxy in proxies:
                proxy.close()
            with self._lock:
                for proxy in self._added:
                    proxy.close()
            self.context.term()


def proxies_of(connection) -> dict[int, KernelProxy]:
    """Rank → its proxy, for the ranks of *connection* (a session's) opened through one (none
    before they are)."""
    proxies = connection.kernel_proxies if connection is not None else None
    return dict(proxies.ranks) if proxies is not None else {}


def open_proxies(wb, ranks) -> dict[int, KernelProxy]:
    """The proxies of *ranks* of *wb*, started the first time each is asked for (kept in its
    connection, ended with it)."""
    connection = wb._connection
    if connection.kernel_proxies is None or connection.kernel_proxies.client is not wb.client:
        close_proxies(connection)
        connection.kernel_proxies = Proxies(wb.client)
    return {rank: connection.kernel_proxies.open(rank, wb.engine_of(rank)) for rank in ranks}


def close_proxies(connection) -> None:
    """End every proxy of *connection* (the session stops, or its world was restarted)."""
    proxies, connection.kernel_proxies = connection.kernel_proxies, None
    if proxies is not None:
        proxies.close()
