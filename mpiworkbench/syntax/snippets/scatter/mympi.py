"""mpi_scatter with MYMPI (Table 4.10; emulated)."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    numproc = mpi.mpi_comm_size(comm)
    return mpi.mpi_scatter(numpy.arange(2.0 * numproc), 2, mpi.MPI_DOUBLE, 2, mpi.MPI_DOUBLE, 0, comm)


if __name__ == "__main__":
    print(main())
