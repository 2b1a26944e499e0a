"""Which address of this host another host reaches it at: what a rank's relay and a rank's kernel
listen on, and what decides whether a controller must listen beyond loopback."""

from __future__ import annotations

import socket

#: Addresses that reach only this host.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def own_address(url: str) -> str:
    """The address this host reaches *url*'s host from (``tcp://host:port``): loopback when that
    host is loopback, else this host's address on the network that leads there (no packet is
    sent: a UDP socket's ``connect`` only picks the route)."""
    host = url.rpartition("//")[2].rpartition(":")[0].strip("[]")
    if host in ("", *LOOPBACK) or host.startswith("127."):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))
        return probe.getsockname()[0]
