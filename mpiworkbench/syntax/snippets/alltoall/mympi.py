"""mpi_alltoall with MYMPI (Table 4.11; emulated)."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    myrank, numproc = mpi.mpi_comm_rank(comm), mpi.mpi_comm_size(comm)
    mine = 100.0 * myrank + numpy.arange(numproc)
    return mpi.mpi_alltoall(mine, 1, mpi.MPI_DOUBLE, 1, mpi.MPI_DOUBLE, comm)


if __name__ == "__main__":
    print(main())
