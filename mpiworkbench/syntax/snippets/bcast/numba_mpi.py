"""bcast with numba-mpi inside @numba.njit."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def broadcast(data):
    numba_mpi.bcast(data, 0)
    return data


def main(comm=None):
    data = np.arange(4) * 10.0 if numba_mpi.rank() == 0 else np.empty(4)
    return broadcast(data)


if __name__ == "__main__":
    print(main())
