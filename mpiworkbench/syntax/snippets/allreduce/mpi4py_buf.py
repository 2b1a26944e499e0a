"""Allreduce with the buffer API into a pre-allocated array."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    mine = np.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    total = np.empty(2)
    comm.Allreduce(mine, total, op=MPI.SUM)
    return total


if __name__ == "__main__":
    print(main())
