"""Late, not deadlocked: a rank that is computing (outside MPI) while others wait for it.

A hang report (:mod:`~mpiworkbench.trace.hang`) that finds ranks blocked in a collective or in a
receive from one rank, while that rank runs outside MPI, is not looking at a deadlock: the rank
will join when its computation ends (Scalasca's Late Sender and Wait at N×N, seen live). Said
before any deadlock is suspected: "rank 1 has been computing for 40 s; ranks 0, 2 wait for it in
MPI_Allreduce". No MPI here.
"""

from __future__ import annotations

from mpiworkbench.trace.events import COLLECTIVES, KIND

# RankState and InFlight (trace/hang.py) are named in annotations only: hang imports this module.

#: Blocking sends that wait for their receiver (a large message goes by rendezvous).
BLOCKING_SENDS = frozenset({KIND["MPI_Send"], KIND["MPI_Ssend"]})
#: Blocking receives (mpi4py's ``recv`` is an Mprobe, then an Mrecv).
BLOCKING_RECEIVES = frozenset({KIND["MPI_Recv"], KIND["MPI_Probe"], KIND["MPI_Mprobe"]})


def late_ranks(ranks: list[RankState], blocked: dict[int, InFlight], seen: set[int]) -> list[str]:
    """The causes, in words, of the ranks that are merely late: running outside MPI while the
    *blocked* ranks (rank → its in-flight record) wait for them in a collective on
    ``COMM_WORLD`` or in a send or receive naming them. Ranks in *seen* (already explained) are
    left out; the waiting ranks named are added to it."""
    causes = []
    for r in sorted(ranks, key=lambda r: r.rank):
        if r.state != "running" or r.inflight is None or r.inflight.call is not None or r.rank in seen:
            continue
        waiting: dict[str, list[int]] = {}
        for rank, rec in sorted(blocked.items()):
            kind = KIND.get(rec.call, -1)
            needs = (kind in COLLECTIVES and rec.comm in (0, -1)) or (
                kind in BLOCKING_RECEIVES | BLOCKING_SENDS and rec.peer == r.rank)
            if needs and rank not in seen:
                waiting.setdefault(rec.call, []).append(rank)
        for call, waiters in waiting.items():
            who = f"rank{'s' if len(waiters) > 1 else ''} {', '.join(map(str, waiters))}"
            since = f"has been computing for {r.inflight.outside:.0f} s" if r.inflight.outside else "is computing"
            causes.append(
                f"rank {r.rank} {since}; {who} wait{'' if len(waiters) > 1 else 's'} for it in {call}: "
                f"rank {r.rank} is late, not deadlocked (it is outside MPI, so it will join when its "
                "computation ends: a load imbalance; if it never should take this long, see its line below)")
            seen.update(waiters)
    return causes
