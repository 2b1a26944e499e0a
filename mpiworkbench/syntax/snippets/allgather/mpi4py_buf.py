"""Allgather with the buffer API into a (size, 2) array on every rank."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    table = np.empty((comm.size, 2))
    comm.Allgather(np.array([comm.rank, comm.rank**2], dtype=float), table)
    return table


if __name__ == "__main__":
    print(main())
