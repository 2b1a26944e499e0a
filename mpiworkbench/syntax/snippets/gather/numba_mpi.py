"""gather with numba-mpi inside @numba.njit (equal counts only: no Gatherv)."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def gather_to_root(mine, table):
    numba_mpi.gather(mine, table, mine.size, 0)
    return table


def main(comm=None):
    rank, size = numba_mpi.rank(), numba_mpi.size()
    table = gather_to_root(np.array([rank, rank**2], dtype=np.float64), np.empty((size, 2)))
    return table if rank == 0 else None


if __name__ == "__main__":
    print(main())
