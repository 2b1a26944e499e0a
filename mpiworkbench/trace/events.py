"""The interposer's records as NumPy sees them: one dtype per C struct of ``interposer.c``, and
the call kinds in the interposer's order with the family each belongs to (the one place that
says which calls are sends, receives, collectives, …)."""

from __future__ import annotations

import numpy as np

#: Call kinds and their families, in the interposer's order (``wbtrace_kind_name``; the C enum
#: follows this table and ``wbtrace_kind_name`` is checked against it when the trace is read).
_KINDS_AND_FAMILIES = (
    ("MPI_Send", "send"), ("MPI_Ssend", "send"), ("MPI_Recv", "receive"), ("MPI_Isend", "send"),
    ("MPI_Issend", "send"), ("MPI_Irecv", "receive"), ("MPI_Sendrecv", "sendrecv"),
    ("MPI_Sendrecv_replace", "sendrecv"), ("MPI_Probe", "probe"), ("MPI_Mprobe", "probe"),
    ("MPI_Mrecv", "receive"), ("MPI_Wait", "wait"), ("MPI_Waitall", "wait"), ("MPI_Waitany", "wait"),
    ("MPI_Barrier", "barrier"), ("MPI_Bcast", "collective"), ("MPI_Reduce", "collective"),
    ("MPI_Allreduce", "collective"), ("MPI_Gather", "collective"), ("MPI_Gatherv", "collective"),
    ("MPI_Scatter", "collective"), ("MPI_Scatterv", "collective"), ("MPI_Allgather", "collective"),
    ("MPI_Allgatherv", "collective"), ("MPI_Alltoall", "collective"), ("MPI_Alltoallv", "collective"),
    # MPI-3 non-blocking collectives: the call starts it, the Wait/Test that completes the
    # request sets the event's t_done (a span from start to completion)
    ("MPI_Ibarrier", "nonblocking collective"), ("MPI_Ibcast", "nonblocking collective"),
    ("MPI_Ireduce", "nonblocking collective"), ("MPI_Iallreduce", "nonblocking collective"),
    ("MPI_Igather", "nonblocking collective"), ("MPI_Iscatter", "nonblocking collective"),
    ("MPI_Iallgather", "nonblocking collective"), ("MPI_Ialltoall", "nonblocking collective"),
    # completion: consecutive unsuccessful tests of the same request(s) fold into one event
    # (``count`` calls, from the first to the last); ``t_done`` is set when the last completed
    ("MPI_Test", "test"), ("MPI_Testall", "test"), ("MPI_Testany", "test"), ("MPI_Testsome", "test"),
    ("MPI_Waitsome", "wait"),
    # persistent point-to-point and MPI-4 persistent collectives: the *_init call, then one
    # MPI_Start event per started operation (``op`` says which init, ``req`` which request)
    ("MPI_Send_init", "persistent"), ("MPI_Ssend_init", "persistent"), ("MPI_Recv_init", "persistent"),
    ("MPI_Barrier_init", "persistent"), ("MPI_Bcast_init", "persistent"), ("MPI_Reduce_init", "persistent"),
    ("MPI_Allreduce_init", "persistent"), ("MPI_Allgather_init", "persistent"),
    ("MPI_Alltoall_init", "persistent"),
    ("MPI_Start", "persistent"), ("MPI_Startall", "persistent"), ("MPI_Request_free", "persistent"),
    # MPI-4 partitioned: ``count`` partitions; Pready/Parrived name theirs in ``aux``
    ("MPI_Psend_init", "partitioned"), ("MPI_Precv_init", "partitioned"), ("MPI_Pready", "partitioned"),
    ("MPI_Pready_range", "partitioned"), ("MPI_Parrived", "partitioned"),
    # one-sided: ``req`` is the window (numbered per rank in creation order); a Put/Get/
    # Accumulate's t_done is when the fence, unlock or flush that completes it returned
    ("MPI_Win_create", "one-sided sync"), ("MPI_Win_allocate", "one-sided sync"),
    ("MPI_Win_free", "one-sided sync"), ("MPI_Win_fence", "one-sided sync"),
    ("MPI_Win_lock", "one-sided sync"), ("MPI_Win_unlock", "one-sided sync"),
    ("MPI_Win_lock_all", "one-sided sync"), ("MPI_Win_unlock_all", "one-sided sync"),
    ("MPI_Win_flush", "one-sided sync"), ("MPI_Win_flush_all", "one-sided sync"),
    ("MPI_Put", "one-sided"), ("MPI_Get", "one-sided"), ("MPI_Accumulate", "one-sided"),
    ("MPI_Get_accumulate", "one-sided"), ("MPI_Fetch_and_op", "one-sided"),
    ("MPI_Compare_and_swap", "one-sided"),
    # communicators: ``comm`` is the parent, ``req`` the new communicator (table index), ``bytes``
    # its size
    ("MPI_Comm_dup", "communicator"), ("MPI_Comm_split", "communicator"), ("MPI_Comm_create", "communicator"),
    ("MPI_Comm_split_type", "communicator"), ("MPI_Cart_create", "communicator"),
    ("MPI_Cart_sub", "communicator"), ("MPI_Comm_free", "communicator"),
)
KINDS = tuple(kind for kind, _ in _KINDS_AND_FAMILIES)
KIND = {name: i for i, name in enumerate(KINDS)}
#: kind name → family: send, receive, sendrecv, probe, wait, test, barrier, collective,
#: nonblocking collective, persistent, partitioned, one-sided, one-sided sync, communicator.
FAMILY = dict(_KINDS_AND_FAMILIES)
FAMILIES = tuple(dict.fromkeys(FAMILY.values()))


def _kinds(*families: str) -> frozenset[int]:
    return frozenset(KIND[k] for k, f in FAMILY.items() if f in families)


SENDS = frozenset(KIND[k] for k in ("MPI_Send", "MPI_Ssend", "MPI_Isend", "MPI_Issend", "MPI_Sendrecv", "MPI_Sendrecv_replace"))
RECEIVES = frozenset(KIND[k] for k in ("MPI_Recv", "MPI_Irecv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace"))
#: Persistent and partitioned inits whose MPI_Start is a send, or a receive (``op`` of a Start).
STARTED_SENDS = frozenset(KIND[k] for k in ("MPI_Send_init", "MPI_Ssend_init", "MPI_Psend_init"))
STARTED_RECEIVES = frozenset(KIND[k] for k in ("MPI_Recv_init", "MPI_Precv_init"))
#: MPI-4 persistent collectives' inits: an MPI_Start of one runs until its ``t_done``.
STARTED_COLLECTIVES = frozenset(KIND[k] for k in ("MPI_Barrier_init", "MPI_Bcast_init", "MPI_Reduce_init",
                                                  "MPI_Allreduce_init", "MPI_Allgather_init", "MPI_Alltoall_init"))
STARTS = frozenset(KIND[k] for k in ("MPI_Start", "MPI_Startall"))
WAITS = frozenset(KIND[k] for k in ("MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Probe", "MPI_Mprobe"))
#: Blocking collectives: every member of the communicator is in the call at once.
COLLECTIVES = _kinds("barrier", "collective")
NONBLOCKING_COLLECTIVES = _kinds("nonblocking collective")
ONE_SIDED = _kinds("one-sided")
TESTS = _kinds("test")
#: Communicator constructors (and Comm_free): their ``req`` is a communicator, not a request.
COMMUNICATORS = _kinds("communicator")

#: A peer of -1 (MPI_PROC_NULL) or none; -2 any source. A tag of -3: none; -1 any tag.
NO_PEER, ANY_SOURCE, NO_TAG, ANY_TAG = -1, -2, -3, -1
#: The ``comm`` of an event on a communicator the interposer's table had no room for.
UNKNOWN_COMM = -1

#: ``wb_event`` (72 bytes). ``comm`` is the communicator's index in the rank's communicator
#: table (:data:`COMM_DTYPE`; 0 is ``MPI_COMM_WORLD``); in a gathered :class:`Trace` it is the
#: index in ``Trace.comms``. ``req`` names a request (non-blocking and persistent operations:
#: a number per rank), a window (one-sided) or a new communicator; ``op`` is what an
#: ``MPI_Start`` started (a kind), or how many requests a multi-request test or wait was given;
#: ``count`` folds repeated calls (tests) or counts partitions or a grid's dimensions; ``aux`` is
#: a partition (Pready/Parrived) or a one-sided target (a rank of the window's communicator);
#: a test's ``t_done`` is when the one that completed its request(s) returned.
EVENT_DTYPE = np.dtype([
    ("t0", "f8"), ("t1", "f8"), ("t_done", "f8"),
    ("kind", "i4"), ("peer", "i4"), ("tag", "i4"), ("comm", "i4"),
    ("bytes", "i8"), ("peer2", "i4"), ("tag2", "i4"),
    ("req", "i4"), ("op", "i4"), ("count", "i4"), ("aux", "i4"),
])
#: An event of a gathered trace: the rank that made the call in front.
TRACE_DTYPE = np.dtype([("rank", "i4"), *((name, EVENT_DTYPE.fields[name][0]) for name in EVENT_DTYPE.names)])

#: ``wb_comm``: a communicator this rank has used or made. ``how`` is the kind that made it
#: (-1: ``MPI_COMM_WORLD``, -2: ``MPI_COMM_SELF``, -3: met in a call, origin not seen),
#: ``parent`` its parent's index, ``ordinal`` how many communicators this rank had made from
#: that parent before it (collective: the same on every member), ``color`` the split colour,
#: ``dims`` a Cartesian grid's dimensions (``ndims`` of them); its members' world ranks come
#: from ``wbtrace_comm_members``.
MAX_DIMS = 4
COMM_NAME_LEN = 64
COMM_DTYPE = np.dtype([
    ("handle", "i4"), ("how", "i4"), ("parent", "i4"), ("ordinal", "i4"), ("color", "i4"),
    ("size", "i4"), ("ndims", "i4"), ("dims", "i4", (MAX_DIMS,)), ("freed", "i4"),
    ("name", f"S{COMM_NAME_LEN}"),
])
WORLD_HOW, SELF_HOW, SEEN_HOW = -1, -2, -3

RECENT = 16
SENT_DTYPE = np.dtype([("t", "f8"), ("dest", "i4"), ("tag", "i4"), ("bytes", "i8"), ("kind", "i4"), ("comm", "i4")])
#: ``wb_slot``: the in-flight record of one process.
SLOT_DTYPE = np.dtype([
    ("magic", "u4"), ("version", "u4"),
    ("pid", "i4"), ("rank", "i4"), ("size", "i4"), ("on", "i4"),
    ("calls", "i8"), ("depth", "i4"),
    ("kind", "i4"), ("peer", "i4"), ("tag", "i4"), ("comm", "i4"), ("comm_size", "i4"),
    ("bytes", "i8"), ("since", "f8"), ("nsent", "i8"),
    ("nevents", "i8"), ("capacity", "i8"), ("dropped", "i8"),
    ("sent", SENT_DTYPE, (RECENT,)),
])
MAGIC = 0x57425452


def kind_name(kind: int) -> str:
    return KINDS[kind] if 0 <= kind < len(KINDS) else f"kind {kind}"


def family(kind: str) -> str:
    """The family of a call kind (``"MPI_Iallreduce"`` → ``"nonblocking collective"``)."""
    return FAMILY.get(kind, "collective")
