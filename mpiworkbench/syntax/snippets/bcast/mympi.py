"""mpi_bcast with MYMPI (Table 4.5; emulated): count and datatype given, value returned."""

import numpy

from mpiworkbench.syntax.historic import mympi as mpi
def main():
    comm = mpi.MPI_COMM_WORLD
    data = numpy.arange(4) * 10.0 if mpi.mpi_comm_rank(comm) == 0 else numpy.zeros(4)
    return mpi.mpi_bcast(data, 4, mpi.MPI_DOUBLE, 0, comm)


if __name__ == "__main__":
    print(main())
