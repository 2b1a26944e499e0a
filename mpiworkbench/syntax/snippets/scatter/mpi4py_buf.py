"""Scatter with the buffer API: row r of the root's array goes to rank r."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    table = np.arange(2.0 * comm.size).reshape(comm.size, 2) if comm.rank == 0 else None
    mine = np.empty(2)
    comm.Scatter(table, mine, root=0)
    return mine


if __name__ == "__main__":
    print(main())
