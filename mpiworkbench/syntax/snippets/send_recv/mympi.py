"""mpi_send/mpi_recv with MYMPI (Table 4.2; emulated): explicit count and datatype, value returned."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    myrank = mpi.mpi_comm_rank(comm)
    if myrank == 0:
        mpi.mpi_send(numpy.array([1.0, 2.0, 3.0, 4.0]), 4, mpi.MPI_DOUBLE, 1, 11, comm)
    elif myrank == 1:
        return mpi.mpi_recv(4, mpi.MPI_DOUBLE, 0, 11, comm)
    return None


if __name__ == "__main__":
    print(main())
