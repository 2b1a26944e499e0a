"""Sendrecv with the buffer API; PROC_NULL leaves the ghost buffer untouched (thesis §4.2)."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    right = comm.rank + 1 if comm.rank + 1 < comm.size else MPI.PROC_NULL
    left = comm.rank - 1 if comm.rank > 0 else MPI.PROC_NULL
    ghost = np.full(3, -1.0)
    comm.Sendrecv(np.full(3, float(comm.rank)), dest=right, recvbuf=ghost, source=left)
    return ghost


if __name__ == "__main__":
    print(main())
