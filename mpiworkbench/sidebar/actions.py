"""The world's Restart and Stop in the lab's world sidebar, and the opening of its ranks for
debugging (their *Debug* and *Console* on a world no notebook opened yet), run inside a
notebook's kernel.

The sidebar sends one silent ``execute_request`` to a kernel of the lab that is a client of the
world (the world's ``clients/*.json`` record each client's kernel id), whose user expression calls
:func:`world_action`: it finds that process's session(s) of the cluster
(:func:`mpiworkbench.client.calls.connection.sessions_of`) and calls ``wb.restart()`` or
``wb.stop()`` on it — or, to open the ranks, writes every rank's connection file as
``wb.connection_file(rank)`` does (:func:`~mpiworkbench.client.calls.debugging.connection_files`:
the lab then lists the ranks' kernels) — exactly as the notebook's own cell would, and answers one
line, which the sidebar shows. A failure (no session of that world in the kernel, another notebook's work on the
ranks) is raised with its own message; the sidebar shows its name and message.
"""

from __future__ import annotations

import os

from mpiworkbench.client.calls.connection import sessions_of
from mpiworkbench.client.calls.debugging import connection_files

#: What the sidebar may ask for.
ACTIONS = ("restart", "stop", "open")


class Line(str):
    """A one-line answer whose ``repr`` is the line itself: a user expression answers with the
    ``text/plain`` of its value, which is its ``repr``."""

    def __repr__(self) -> str:
        return str(self)


def world_action(action: str, cluster_id: str, profile_dir: str | os.PathLike | None = None) -> Line:
    """Restart (``"restart"``: ``wb.restart()``) or stop (``"stop"``: ``wb.stop()``) the MPI world
    *cluster_id* through this process's session(s) of it, or open its ranks for debugging
    (``"open"``: every rank's connection file written, as ``wb.connection_file(rank)`` writes
    it); what was done, in one line.

    A restart goes through the first session (any other of this process follows it on its next
    call, as another notebook's does); a stop stops every session of the world here (an attached
    session detaches and leaves the cluster running, as its ``wb.stop()`` does).

    Raises
    ------
    ValueError
        *action* is not one of :data:`ACTIONS`.
    LookupError
        No session of this process is connected to that world.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown world action {action!r}: the sidebar asks for one of {', '.join(ACTIONS)}")
    sessions = sessions_of(cluster_id, profile_dir)
    if action == "open":  # (kept while that session lasts, as a notebook's wb.connection_file)
        files = connection_files(sessions[0])
        return Line(f"{cluster_id}: rank(s) {', '.join(map(str, sorted(files)))} open for debugging "
                    f"(their kernels listed in the lab)")
    if action == "restart":
        session = sessions[0].restart()
        return Line(f"{cluster_id} restarted: {session.n} fresh rank(s), everything on the old ones lost")
    done = [session.stop() for session in sessions]
    return Line(f"{cluster_id}: " + "; ".join(dict.fromkeys(done)))
