"""Restarts of a world that several notebooks share: who may restart it, how the others wait
while it happens, and what they are told afterwards.

A restart holds the world's turn under the label :data:`~mpiworkbench.client.calls.turns.RESTARTING`
while the engines are replaced, so other clients wait instead of sending work to dying ranks;
each of them finds the new engine set recorded in the world on its next call and follows it
(:meth:`mpiworkbench.client.calls.session.Session.restart` does the restart itself).
"""

from __future__ import annotations

import time
from typing import Any

from mpiworkbench.client.cluster import attach, health, leftovers, owners, stop
from mpiworkbench.client.calls.debugging import remove_connection_files
from mpiworkbench.client.errors import WorldInUse
from mpiworkbench.client.calls.turns import RESTARTING, exclusive_use

#: Seconds a session waits for its client to see the engines another client restarted.
RESTART_FOLLOW_S = 10.0
#: Seconds a restart waits for the clients whose work it ended to let the world go.
RESTART_TURN_S = 60.0


def end_running_work(connection, force: bool) -> None:
    """Before a restart: refuse it while another client's live work runs (unless *force*);
    otherwise end whatever holds the ranks — blocked work, forced — so that its client lets
    the world's turn go (its calls fail as the engines die).

    Raises
    ------
    WorldInUse
        Another client's work is running on the ranks and *force* is false.
    """
    world = connection.turns
    holder = world.holder() if world is not None else None
    if not holder:
        return
    if holder.get("id") != world.me.id and not holder.get("blocked") and not force:
        since = holder.get("running_since")
        raise WorldInUse(
            f"{holder.get('notebook')} (pid {holder.get('pid')}) is running "
            f"{holder.get('label') or 'work'} on the ranks"
            + (f" (for {time.time() - since:.0f} s)" if since else "")
            + "; a restart would end it. Wait until wb.state reads 'running', or restart anyway "
            "with wb.restart(force=True): that notebook is told why on its next call.")
    # the ranks' footprints are remembered: the restart's kill_engines removes their files
    stop.kill_ranks(connection.cluster, connection.client, connection.ranks)


def restart_turn(world):
    """Hold *world*'s turn while its engines are replaced (a ``with`` block): the other clients
    wait ("restarting the MPI world") instead of sending work to dying ranks."""
    return exclusive_use(world, RESTARTING, RESTART_TURN_S, restarting=True)


def wait_for_engine_set(connection, n: int) -> dict[str, Any] | None:
    """The new engine set another client recorded, once this client sees its engines (at most
    :data:`RESTART_FOLLOW_S`); None when they never show (a new controller, too)."""
    deadline = time.monotonic() + RESTART_FOLLOW_S
    known = connection.engine_set(n)
    while known is None and time.monotonic() < deadline:  # our client may not have seen them yet
        time.sleep(0.05)
        known = connection.engine_set(n)
    return known


def followed(record: dict[str, Any]) -> str:
    """What a notebook is told on its first call after another client restarted the world."""
    by = record.get("restarted_by") or {}
    when = time.strftime("%H:%M:%S", time.localtime(record.get("at") or time.time()))
    who = f"{by.get('notebook')} (pid {by.get('pid')})" if by else "another client"
    return (f"the MPI world was restarted by {who} at {when}: everything this notebook had on the "
            f"ranks (variables, solvers, remote objects) is gone. This session is connected to the "
            f"new ranks; run your cell again.")


def through_server(connection, server: owners.JupyterServer, profile: str, cluster_id: str, n: int) -> None:
    """Restart a cluster the JupyterLab *server* owns (its sidebar's STOP stops what the server
    started) through the server itself, holding the world's turn meanwhile; *connection* is
    released: the caller attaches to the cluster the server started."""
    left = stop.kill_ranks(connection.cluster, connection.client, connection.ranks)
    leftovers.after_kill(left)  # the server's restart does not know the ranks' /dev/shm files
    world, connection.turns = connection.turns, None
    remove_connection_files(connection)
    connection.release(remove_world=False)
    try:
        with restart_turn(world):
            owners.restart_through(server, profile, cluster_id, n)
    finally:
        if world is not None:
            world.close()


def follow(session) -> str:
    """When another client restarted *session*'s world since its last call: connect it to the new
    ranks and say what happened (``""`` when nothing did). An attached session whose cluster got a
    new controller too (a JupyterLab server restarted it) attaches anew."""
    connection = session._connection
    if connection is None or connection.turns is None:
        return ""
    record = connection.turns.changed_since_seen()
    if not record or record.get("generation") == connection.generation:
        return ""
    known = wait_for_engine_set(connection, session.n)
    if known is not None:
        session._take_engine_set(known)
        if not session.owns_cluster and session.profile is not None:
            # the cluster file records the new engine set: read it, so that our view of
            # the launchers (whether the world died) follows
            connection.cluster = attach.running_cluster(session.profile, session._attach_id) or connection.cluster
        elif session.owns_cluster:
            # our cluster object knows only the engines we started, which are gone
            health.drop_ended_engine_sets(session.cluster)
    elif not session.owns_cluster and session.profile is not None:
        # a new controller too (a JupyterLab server restarted its cluster): attach anew
        session._connection = None
        remove_connection_files(connection)
        connection.release(remove_world=False)
        session._attach(attach.running_cluster(session.profile, session._attach_id, required=True))
    else:
        return ""
    return followed(record)


def restart(session, force: bool):
    """:meth:`Session.restart <mpiworkbench.client.calls.session.Session.restart>`: kill
    *session*'s engines (even blocked in MPI) and start new ones, holding the world's turn; a
    cluster a JupyterLab server owns is restarted by the server. Returns *session*."""
    if session.cluster is None:
        return session.start()
    connection = session._connection
    end_running_work(connection, force)
    server = None if session.owns_cluster else owners.owning_server(session.cluster)
    if server is not None:
        return _restart_through(session, server)
    connection.view = None
    remove_connection_files(connection)  # the ranks' kernels die with them: the lab lists them no more
    with restart_turn(connection.turns), attach.acting_on(session.cluster, attached=not session.owns_cluster):
        stop.kill_engines(session.cluster, session.client, session.ranks, session.log_level)
        session.cluster.start_engines_sync(session.n)
        session._connect_engines(restarted=True)  # (the new ranks' processes recorded at once)
        if not session.owns_cluster:
            # the owner rewrites the cluster file when it sees its engines stop, which can
            # drop the set started here: record it again, so `ipcluster stop` stops it too
            session.cluster.update_cluster_file()
    return session


def _restart_through(session, server: owners.JupyterServer):
    # the JupyterLab server owns this cluster (its sidebar's STOP stops what the server
    # started): ask it for the fresh world, then attach to the cluster it started
    connection, session._connection = session._connection, None
    through_server(connection, server, session.profile, session.cluster_id, session.n)
    return session._attach(attach.running_cluster(session.profile, session.cluster_id, required=True),
                           restarted=True)
