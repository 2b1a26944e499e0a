"""Hello world with mpi4py: the buffer API needs nothing different here."""

from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    numproc = comm.Get_size()
    myrank = comm.Get_rank()
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
