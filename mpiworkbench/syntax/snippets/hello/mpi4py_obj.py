"""Hello world with mpi4py (thesis §3.2): an explicit communicator, Get_size/Get_rank."""

from mpi4py import MPI  # MPI_Init happens here


def main(comm=MPI.COMM_WORLD):
    numproc = comm.Get_size()
    myrank = comm.Get_rank()
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
