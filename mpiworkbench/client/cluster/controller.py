"""The controller every workbench cluster runs: ipyparallel's, in one process, its schedulers as
threads (``IPController.use_threads``) instead of eight child processes, with one upstream bug
mended so that the broadcast path (``wb.run``, ``%%px`` at many ranks) works that way.

Why threads: measured with ``benchmarks/registration_storm.py --controller-sweep 2,16,64``
(docs/scale.md), the threaded controller takes about a quarter of the memory (~100 MB against
~390 MB at 2–64 engines: one Python process instead of nine), starts as fast, and its round
trips (``DirectView`` and broadcast) and CPU per call are the same or lower on this 2-core
machine — several notebooks, or a class, each with a cluster, add up the difference.

The bug (ipyparallel 9.2): ``BroadcastScheduler.accumulated_replies`` and
``accumulated_targets`` are class attributes, one dict shared by every scheduler of the
broadcast tree. As processes each scheduler has its own copy; as threads the root and the
leaves write the same key (the call's id) into the same dict, the first leaf to finish pops it
and the next raises ``KeyError``: a coalescing call never returns. :func:`mend` gives each
scheduler dicts of its own (harmless where ipyparallel already does).

Its ports, claimed (:func:`claim_ports`). ipyparallel picks each of the controller's ports by
binding a socket to port 0 and closing it, writes them into the connection files, and binds
them for good later: its queues' threads bind them only after the engines have read the file.
In between, any program on the host that asks the system for a free port could be handed the
same one (a Jupyter kernel starting, another cluster's controller): the queue's thread then
dies with "Address already in use", the controller lives on, and every engine waits for a
connection that is never made, until the workbench gives up ("0 of the 2 engines registered":
two CI runs; reproduced with a program holding many free ports at once). Here each port is
claimed: bound by a socket the controller keeps, which other programs' binds and requests for
a free port are refused, and which lets the controller's own queue bind the port (both say
SO_REUSEADDR, and the claim does not listen). Where the system leaves room outside the range it
hands out for port 0 (Linux: above ``ip_local_port_range``, up to 65535, in IANA's private
range), the ports are drawn from there, where only a program that names its port can land.

This file is run by path (:data:`COMMAND`, the launcher's ``controller_cmd``; the launcher
adds ``ipcontroller``'s arguments), not as part of :mod:`mpiworkbench`, whose import the
controller would pay for nothing; it imports nothing of :mod:`mpiworkbench`.
"""

from __future__ import annotations

import errno
import functools
import random
import socket
import sys
from pathlib import Path

#: This file, which ``ps`` shows in the controller's command line (what finds it among processes).
FILE = str(Path(__file__).resolve())
#: What starts the controller (``runpy.run_path`` keeps this file's directory off ``sys.path``,
#: where ``profile.py`` would shadow the standard library's).
COMMAND = [sys.executable, "-c", f"import runpy; runpy.run_path({FILE!r}, run_name='__main__')"]
#: The controller's own arguments: its schedulers as threads.
ARGS = ["--IPController.use_threads=True"]


_mended: set[type] = set()  # the scheduler classes mended in this process


def mend(scheduler_class: type) -> None:
    """Give every instance of *scheduler_class* (ipyparallel's ``BroadcastScheduler``) its own
    reply and target dicts (idempotent)."""
    if scheduler_class in _mended:
        return
    init = scheduler_class.__init__

    def init_with_own_state(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.accumulated_replies, self.accumulated_targets = {}, {}

    scheduler_class.__init__ = init_with_own_state
    _mended.add(scheduler_class)


#: Where Linux says which ports it hands out for port 0 (and for outgoing connections).
PORT_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Random tries for a free port outside that range before the system is asked for one.
TRIES = 200

_claims: list[socket.socket] = []  # the sockets that hold this process's ports: kept until it exits


def private_ports(range_file: Path = PORT_RANGE_FILE) -> range:
    """The ports above those the system hands out for port 0, up to 65535 (empty where it hands
    them all out, or says nothing: then the system's own choice, claimed, is taken)."""
    try:
        high = int(range_file.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return range(0)
    return range(max(high + 1, 1024), 65536)


#: :func:`private_ports` read once: ipyparallel asks for the controller's ports one at a time.
_this_hosts_private_ports = functools.cache(private_ports)


def claim(port: int) -> socket.socket | None:
    """A socket holding *port* (0: the system's choice) on every address of this host, or
    ``None`` when something holds it already. Bound without SO_REUSEADDR, so a port anything
    is bound to (even a connection's remains) is refused; SO_REUSEADDR set afterwards lets this
    process's queue bind the port beside the claim, which does not listen."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("", port))
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            return None
        raise
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def claim_ports(n: int, ports: range | None = None, tries: int = TRIES) -> list[int]:
    """*n* ports claimed for this process until it exits (ipyparallel's
    ``util.select_random_ports`` here): drawn at random from *ports* (default
    :func:`private_ports`), else the system's choice."""
    ports = _this_hosts_private_ports() if ports is None else ports
    chosen = []
    for _ in range(n):
        held = None
        for _ in range(tries if len(ports) else 0):
            held = claim(random.choice(ports))
            if held is not None:
                break
        held = held or claim(0)
        if held is None:
            raise OSError(errno.EADDRINUSE, "no free port left on this host for the controller")
        _claims.append(held)
        chosen.append(held.getsockname()[1])
    return chosen


def main() -> None:
    # imported here, in the controller's process only: the notebook imports this file for COMMAND
    from ipyparallel import util
    from ipyparallel.controller import app
    from ipyparallel.controller.broadcast_scheduler import BroadcastScheduler

    mend(BroadcastScheduler)
    util.select_random_ports = claim_ports  # (ports a profile names, IPController.ports, come first)
    app.main()


if __name__ == "__main__":
    main()
