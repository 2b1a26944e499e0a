"""scatter with numba-mpi inside @numba.njit."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def scatter_from_root(table, mine):
    numba_mpi.scatter(table, mine, mine.size, 0)
    return mine


def main(comm=None):
    size = numba_mpi.size()
    return scatter_from_root(np.arange(2.0 * size).reshape(size, 2), np.empty(2))


if __name__ == "__main__":
    print(main())
