"""The measurement panels' choice of other MPI implementations (**Also under**): under each one
chosen, the same measurement runs on this host after the engines' run (the engines are one
implementation's ranks; the others run as the CLI command itself, ``… --mpi NAME``)."""

from __future__ import annotations

import socket
from typing import Iterator

from mpiworkbench.core.usable import choices


def selector(wb, command: str):
    """The **Also under** control of a panel on *wb*: the implementations usable here other than
    the engines' (:func:`~mpiworkbench.core.usable.choices`); disabled when the engines run on other hosts (a run here would not compare)."""
    import ipywidgets as w

    here = all(host == socket.gethostname() for host in (getattr(wb, "hosts", None) or {}).values())
    return w.SelectMultiple(
        options=[(impl.title, impl.name) for impl in choices()[0] if impl.name != getattr(wb, "mpi", None)],
        value=(), rows=2, description="Also under", disabled=not here,
        tooltip=(f"after the engines' run, the same measurement on this host under each implementation "
                 f"chosen (mpiworkbench {command} --mpi NAME), beside it" if here else
                 f"the engines run on other hosts: compare there with mpiworkbench {command} --mpi"))


def in_turn(panel) -> Iterator[str]:
    """The implementations chosen in *panel*'s ``also``, one by one, until its Stop is pressed
    (``panel._stop``), each said in its status line."""
    for mpi in panel.also.value:
        if panel._stop:
            return
        panel.status.value = f"running under {mpi} on this host…"
        yield mpi
