"""allreduce with numba-mpi inside @numba.njit."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def global_sum(mine, total):
    numba_mpi.allreduce(mine, total, numba_mpi.Operator.SUM)
    return total


def main(comm=None):
    rank = numba_mpi.rank()
    return global_sum(np.array([rank + 1.0, 2.0 * (rank + 1)]), np.empty(2))


if __name__ == "__main__":
    print(main())
