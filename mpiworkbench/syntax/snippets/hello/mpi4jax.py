"""Hello world with mpi4jax: rank and size come from mpi4py's communicator."""

from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    numproc = comm.Get_size()
    myrank = comm.Get_rank()
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
