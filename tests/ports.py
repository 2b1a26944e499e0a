"""Ports for the daemons the suite starts (Slurm's, JupyterLab, JupyterHub's proxy).

A port the kernel hands out for ``bind(("127.0.0.1", 0))`` is an *ephemeral* one: between the
moment it is chosen and the moment the daemon binds it, any process's outgoing connection may be
given the same port, and the daemon then fails with "Address already in use" (seen once the tiers
ran side by side: slurmd of the cluster tier, port 47713). So ports are chosen below the kernel's
ephemeral range, where no outgoing connection is ever placed, and checked free while held.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: Ports are drawn from this many below the ephemeral range's start.
SPAN = 12000


def ephemeral_start() -> int:
    """The first port of the kernel's ephemeral range (32768 unless configured otherwise)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n: int = 1) -> list[int]:
    """*n* distinct ports free on loopback now, below the ephemeral range (held open while chosen)."""
    top = ephemeral_start()
    bottom = max(1024, top - SPAN)
    draw = random.SystemRandom()
    held: list[socket.socket] = []
    try:
        while len(held) < n:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", draw.randrange(bottom, top)))
            except OSError:  # in use: draw another
                s.close()
                continue
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def free_port() -> int:
    """One port of :func:`free_ports`."""
    return free_ports(1)[0]
