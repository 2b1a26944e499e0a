"""reduce with numba-mpi inside @numba.njit (SUM, MIN, MAX only)."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def sum_to_root(mine, total):
    numba_mpi.reduce(mine, total, numba_mpi.Operator.SUM, 0)
    return total


def main(comm=None):
    rank = numba_mpi.rank()
    total = sum_to_root(np.array([rank + 1.0, 2.0 * (rank + 1)]), np.empty(2))
    return total if rank == 0 else None


if __name__ == "__main__":
    print(main())
