"""Head-to-head blocking sends: when do they deadlock? Watched safely, with a timeout.

What students write first — both partners send, then receive::

    comm.Send(mine, dest=partner)      # standard mode: may return early (eager) …
    comm.Recv(theirs, source=partner)  # … or wait for a matching receive: deadlock

A standard-mode send of a small message is copied out ("eager") and returns; a large one
waits until the partner posts its receive ("rendezvous"). If both partners wait, neither
ever receives: a deadlock. :func:`watch_head_to_head` posts the same sends as
non-blocking requests and watches them for *timeout* seconds without posting receives;
then, once every rank has decided, it posts the receives, so every run ends cleanly.
"""

import numpy as np
from mpi4py import MPI


def watch_head_to_head(comm, nbytes: int, timeout: float = 0.5, synchronous: bool = False) -> dict:
    """Would ``Send`` (or ``Ssend``) followed by ``Recv`` deadlock for *nbytes*?

    Pairs ranks (0, 1), (2, 3), …; an unpaired rank has nothing to do. Returns this
    rank's ``{"nbytes", "completed", "waited"}``: completed = the send finished with no
    receive posted (it would not deadlock).
    """
    partner = comm.rank ^ 1
    if partner >= comm.size:
        comm.Barrier()
        return {"nbytes": nbytes, "completed": None, "waited": 0.0}
    mine = np.full(max(nbytes // 8, 1), float(comm.rank))
    theirs = np.empty_like(mine)
    request = (comm.Issend if synchronous else comm.Isend)(mine, dest=partner, tag=5)
    start = MPI.Wtime()
    completed = request.Test()
    while not completed and MPI.Wtime() - start < timeout:
        completed = request.Test()
    waited = MPI.Wtime() - start
    comm.Barrier()  # everyone has decided before anyone posts the receive
    comm.Recv(theirs, source=partner, tag=5)  # the receive the naive code never reaches
    request.Wait()
    assert (theirs == partner).all()
    return {"nbytes": mine.nbytes, "completed": bool(completed), "waited": waited}


def fixed_with_sendrecv(comm, nbytes: int) -> bool:
    """The fix: ``Sendrecv`` pairs the two directions inside MPI, so it cannot deadlock."""
    partner = comm.rank ^ 1
    if partner >= comm.size:
        partner = MPI.PROC_NULL
    mine = np.full(max(nbytes // 8, 1), float(comm.rank))
    theirs = np.full_like(mine, -1.0)
    comm.Sendrecv(mine, dest=partner, sendtag=5, recvbuf=theirs, source=partner, recvtag=5)
    return bool((theirs == (partner if partner != MPI.PROC_NULL else -1.0)).all())
