"""sendrecv with the object API: a message from PROC_NULL arrives as None."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    right = comm.rank + 1 if comm.rank + 1 < comm.size else MPI.PROC_NULL
    left = comm.rank - 1 if comm.rank > 0 else MPI.PROC_NULL
    ghost = comm.sendrecv(np.full(3, float(comm.rank)), dest=right, source=left)
    return np.full(3, -1.0) if ghost is None else ghost


if __name__ == "__main__":
    print(main())
