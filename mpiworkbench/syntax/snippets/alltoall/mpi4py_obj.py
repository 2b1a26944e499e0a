"""alltoall with the object API: item j goes to rank j."""

from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    return comm.alltoall([100.0 * comm.rank + j for j in range(comm.size)])


if __name__ == "__main__":
    print(main())
