"""scatter with the object API: the root passes one item per rank."""

from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    items = [[2.0 * r, 2.0 * r + 1] for r in range(comm.size)] if comm.rank == 0 else None
    return comm.scatter(items, root=0)


if __name__ == "__main__":
    print(main())
