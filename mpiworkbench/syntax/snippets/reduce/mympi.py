"""mpi_reduce with MYMPI (Table 4.6; emulated): count, datatype and op, value returned."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    myrank = mpi.mpi_comm_rank(comm)
    mine = numpy.array([myrank + 1.0, 2.0 * (myrank + 1)])
    return mpi.mpi_reduce(mine, 2, mpi.MPI_DOUBLE, mpi.MPI_SUM, 0, comm)


if __name__ == "__main__":
    print(main())
