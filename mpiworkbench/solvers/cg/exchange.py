"""How CG's ranks talk: the backend, and the ghost-strip exchange before each matvec."""

from __future__ import annotations

import numpy as np

from mpiworkbench.backends import backend_names, get_backend, implemented_names
from mpiworkbench.backends.numba_mpi import NAME as NUMBA_MPI, check_world
from mpiworkbench.solvers.cg import poisson

__all__ = ["BACKENDS", "LocalValueExchange", "make_backend"]

#: Communication backends the solver runs on (mpiworkbench.backends names).
BACKENDS = tuple(implemented_names())


def make_backend(name: str, comm, world_comm=None):
    """The :mod:`mpiworkbench.backends` backend the exchange and the allreduces go through.

    numba-mpi only knows ``COMM_WORLD``, so it talks on the world in place of the solver's
    duplicate when *world_comm* (the communicator the solver was given) is the world or
    holds its ranks in order; otherwise it is refused with the reason.
    """
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {name!r} (registry: {backend_names()})")
    if name == NUMBA_MPI:
        check_world(world_comm if world_comm is not None else comm, same_ranks=True)
        return get_backend(name, None)
    return get_backend(name, comm)


class LocalValueExchange:
    """Fill the ghost strips of a local value vector from the neighbours (thesis ``local_value``).

    Per axis, two ``sendrecv`` calls: send the south edge south while receiving the north
    ghost from the north, then the reverse (``PROC_NULL`` at physical boundaries). Rows
    are contiguous and sent in place; columns are packed into a contiguous buffer first.
    """

    def __init__(self, block: poisson.Block, backend):
        self.backend = backend
        null = backend.PROC_NULL
        ghosts = block.ghost_slices()
        edges = block.boundary_slices()
        mi, mj = block.shape
        self._steps = []
        for send_to, recv_from, tag in (("south", "north", 0), ("north", "south", 1), ("west", "east", 2), ("east", "west", 3)):
            dest, source = getattr(block, send_to), getattr(block, recv_from)
            if dest is None and source is None:
                continue
            strided = send_to in ("west", "east")
            pack = np.empty(mi if strided else mj) if strided else None
            self._steps.append(
                (edges[send_to], pack, null if dest is None else dest, ghosts[recv_from], null if source is None else source, tag)
            )
        self.messages = sum(1 for s in self._steps if s[2] != null)

    def __call__(self, local_value: np.ndarray, owned: np.ndarray) -> None:
        sendrecv = self.backend.sendrecv
        for edge, pack, dest, ghost, source, tag in self._steps:
            data = owned[edge]
            if pack is not None:
                np.copyto(pack, data)
                data = pack
            sendrecv(data, dest, out=local_value[ghost], source=source, sendtag=tag, recvtag=tag)
