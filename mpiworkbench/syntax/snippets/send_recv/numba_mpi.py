"""send/recv with numba-mpi inside @numba.njit (the receiver pre-allocates)."""

import numba
import numba_mpi
import numpy as np


@numba.njit
def exchange(data):
    if numba_mpi.rank() == 0:
        numba_mpi.send(data, 1, 11)
    elif numba_mpi.rank() == 1:
        numba_mpi.recv(data, 0, 11)
    return data


def main(comm=None):
    data = np.array([1.0, 2.0, 3.0, 4.0]) if numba_mpi.rank() == 0 else np.empty(4)
    exchange(data)
    return data if numba_mpi.rank() == 1 else None


if __name__ == "__main__":
    print(main())
