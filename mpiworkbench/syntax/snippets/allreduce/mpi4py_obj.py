"""allreduce with the object API: the sum is returned on every rank."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    mine = np.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    return comm.allreduce(mine, op=MPI.SUM)


if __name__ == "__main__":
    print(main())
