"""sendrecv with numba-mpi (new in 1.2) inside @numba.njit; PROC_NULL works for contiguous buffers."""

import numba
import numba_mpi
import numpy as np
from mpi4py import MPI  # only for the PROC_NULL constant


@numba.njit
def shift_right(mine, ghost, right, left):
    numba_mpi.sendrecv(mine, right, ghost, left, 0, 0)
    return ghost


def main(comm=None):
    rank, size = numba_mpi.rank(), numba_mpi.size()
    right = rank + 1 if rank + 1 < size else MPI.PROC_NULL
    left = rank - 1 if rank > 0 else MPI.PROC_NULL
    return shift_right(np.full(3, float(rank)), np.full(3, -1.0), right, left)


if __name__ == "__main__":
    print(main())
