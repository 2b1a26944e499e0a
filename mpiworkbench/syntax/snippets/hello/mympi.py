"""Hello world with MYMPI (thesis §3.3; emulated): the only module with an explicit MPI_Init."""

import sys

from mpiworkbench.syntax.historic import mympi as mpi  # thesis: import mpi
def main():
    sys.argv = mpi.mpi_init(len(sys.argv), sys.argv)
    comm = mpi.MPI_COMM_WORLD
    numproc = mpi.mpi_comm_size(comm)
    myrank = mpi.mpi_comm_rank(comm)
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    mpi.mpi_finalize()
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
