"""Engine stand-ins: processes that speak ipyparallel's engine registration protocol without
being engines — for a registration storm larger than this machine's memory holds real engines.

**Stand-ins, not engines.** Each stand-in does what an ``ipengine`` does towards the hub to
register and stay registered (``ipyparallel/engine/app.py``, ``register`` and
``complete_registration``; ``controller/heartmonitor.py``, ``Heart``), and nothing else: it sends
a signed ``registration_request`` (``{"uuid": …}``, ipyparallel's ``Session`` with the
controller's key) on a DEALER socket whose identity is its uuid, takes the
``registration_reply``, then echoes every heartbeat ping of the hub's PUB socket back through a
DEALER to the hub's pong socket, under the same identity (the hub completes the registration on
the first pong and keeps an engine whose pongs keep coming). It connects no shell, control or
IOPub socket and runs no kernel: it cannot answer a call.

One process hosts many stand-ins (one zmq poller over all their sockets)::

    python benchmarks/engine_standins.py ENGINE_JSON COUNT

where ENGINE_JSON is the controller's ``ipcontroller-<cluster id>-engine.json``. It registers
all COUNT at once, prints ``registered <k>`` as replies arrive, and beats until terminated.
"""

from __future__ import annotations

import json
import signal
import sys
import uuid


def _session(info: dict):
    from jupyter_client.session import Session  # (what ipyparallel's engines and hub sign with)

    return Session(key=info.get("key", "").encode(), signature_scheme=info["signature_scheme"],
                   packer=info.get("pack", "json"), unpacker=info.get("unpack", "json"))


def run(engine_json: str, count: int) -> None:
    import zmq

    with open(engine_json) as f:
        info = json.load(f)
    session, context = _session(info), zmq.Context()
    url = f"{info['interface']}:{{}}"
    poller = zmq.Poller()
    registrars, pings, pongs = {}, {}, {}
    for _ in range(count):  # the storm: every request at once
        ident = str(uuid.uuid4())
        registrar = context.socket(zmq.DEALER)
        registrar.IDENTITY = ident.encode()
        registrar.connect(url.format(info["registration"]))
        session.send(registrar, "registration_request", content={"uuid": ident})
        registrars[registrar] = ident
        poller.register(registrar, zmq.POLLIN)
    registered = 0
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    try:
        while running[0]:
            for socket, _event in poller.poll(200):
                if socket in registrars:
                    _idents, msg = session.feed_identities(socket.recv_multipart())
                    reply = session.deserialize(msg)["content"]
                    ident = registrars.pop(socket)
                    poller.unregister(socket)
                    socket.close(linger=0)
                    if reply.get("status") != "ok":
                        print(f"refused {ident}: {reply.get('evalue', reply)}", flush=True)
                        continue
                    where = reply.get("connection_info") or info
                    ping, pong = context.socket(zmq.SUB), context.socket(zmq.DEALER)
                    ping.setsockopt(zmq.SUBSCRIBE, b"")
                    pong.IDENTITY = ident.encode()
                    ping.connect(f"{where['interface']}:{where['hb_ping']}")
                    pong.connect(f"{where['interface']}:{where['hb_pong']}")
                    pings[ping] = pong
                    poller.register(ping, zmq.POLLIN)
                    registered += 1
                    print(f"registered {registered}", flush=True)
                elif socket in pings:  # a ping: echo it, as ipyparallel's Heart (a FORWARDER device)
                    pings[socket].send_multipart(socket.recv_multipart())
    finally:
        context.destroy(linger=0)


if __name__ == "__main__":
    run(sys.argv[1], int(sys.argv[2]))
