"""isend/irecv/waitall with numba-mpi inside @numba.njit (contiguous arrays only)."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def ring(mine, ghost, right, left):
    requests = np.empty(2, numba_mpi.RequestType)
    status, requests[0:1] = numba_mpi.irecv(ghost, left, 0)
    status, requests[1:2] = numba_mpi.isend(mine, right, 0)
    numba_mpi.waitall(requests)
    return ghost


def main(comm=None):
    rank, size = numba_mpi.rank(), numba_mpi.size()
    return ring(np.full(3, float(rank)), np.empty(3), (rank + 1) % size, (rank - 1) % size)


if __name__ == "__main__":
    print(main())
