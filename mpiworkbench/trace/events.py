"""The interposer's records as NumPy sees them: one dtype per C struct of ``interposer.c``."""

from __future__ import annotations

import numpy as np

#: Call kinds in the interposer's order (``wbtrace_kind_name``).
KINDS = (
    "MPI_Send", "MPI_Ssend", "MPI_Recv", "MPI_Isend", "MPI_Issend", "MPI_Irecv", "MPI_Sendrecv",
    "MPI_Sendrecv_replace", "MPI_Probe", "MPI_Mprobe", "MPI_Mrecv", "MPI_Wait", "MPI_Waitall",
    "MPI_Waitany", "MPI_Barrier", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Gather",
    "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Allgather", "MPI_Allgatherv",
    "MPI_Alltoall", "MPI_Alltoallv",
)
KIND = {name: i for i, name in enumerate(KINDS)}
SENDS = frozenset(KIND[k] for k in ("MPI_Send", "MPI_Ssend", "MPI_Isend", "MPI_Issend", "MPI_Sendrecv", "MPI_Sendrecv_replace"))
RECEIVES = frozenset(KIND[k] for k in ("MPI_Recv", "MPI_Irecv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace"))
WAITS = frozenset(KIND[k] for k in ("MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Probe", "MPI_Mprobe"))
COLLECTIVES = frozenset(range(KIND["MPI_Barrier"], len(KINDS)))

#: A peer of -1 (MPI_PROC_NULL) or none; -2 any source. A tag of -3: none; -1 any tag.
NO_PEER, ANY_SOURCE, NO_TAG, ANY_TAG = -1, -2, -3, -1

#: ``wb_event`` (56 bytes).
EVENT_DTYPE = np.dtype([
    ("t0", "f8"), ("t1", "f8"), ("t_done", "f8"),
    ("kind", "i4"), ("peer", "i4"), ("tag", "i4"), ("comm", "i4"),
    ("bytes", "i8"), ("peer2", "i4"), ("tag2", "i4"),
])
#: An event of a gathered trace: the rank that made the call in front.
TRACE_DTYPE = np.dtype([("rank", "i4"), *((name, EVENT_DTYPE.fields[name][0]) for name in EVENT_DTYPE.names)])

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
