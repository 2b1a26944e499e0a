"""mpi_gather with MYMPI (Table 4.8; emulated): send and receive counts and types."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    myrank = mpi.mpi_comm_rank(comm)
    mine = numpy.array([myrank, myrank**2], 'd')
    return mpi.mpi_gather(mine, 2, mpi.MPI_DOUBLE, 2, mpi.MPI_DOUBLE, 0, comm)


if __name__ == "__main__":
    print(main())
