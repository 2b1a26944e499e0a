"""gather with the object API: a list, one item per rank, on the root."""

from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    return comm.gather([comm.rank, comm.rank**2], root=0)


if __name__ == "__main__":
    print(main())
