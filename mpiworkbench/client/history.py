"""What ipyparallel keeps of every call, and dropping it for the calls the workbench makes for
itself (frames, runs, rank maps, hang-report probes): a session's memory is bounded by what
its user keeps, not by how many calls it made.

ipyparallel drops a call's results and metadata from its client once the call has finished;
what it keeps for the client's life is one message id per engine call in the client's and
the view's ``history`` lists. A user's own ``%%px`` calls stay there (ipyparallel's
behaviour; ``wb.client.history.clear()`` drops them). The controller keeps task records too
(its task database, bounded by :func:`mpiworkbench.client.cluster.start.hub_database_settings`).
"""

from __future__ import annotations


def drop(ar, histories) -> None:
    """Remove the messages of *ar* (a finished call the workbench made) from ipyparallel's
    *histories* (a client's and a view's ``history``: lists that grow by one message id per
    engine call for as long as the client lives). ipyparallel itself drops a call's results and
    metadata once it has finished; the histories are all it keeps."""
    for history in histories:
        for msg_id in getattr(ar, "msg_ids", ()):
            try:
                history.remove(msg_id)  # one atomic step: another thread may be appending
            except ValueError:
                pass
