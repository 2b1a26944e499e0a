"""Reduce with the buffer API: the root pre-allocates the result."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    mine = np.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    total = np.empty(2) if comm.rank == 0 else None
    comm.Reduce(mine, total, op=MPI.SUM, root=0)
    return total


if __name__ == "__main__":
    print(main())
