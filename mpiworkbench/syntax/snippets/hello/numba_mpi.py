"""Hello world with numba-mpi: rank() and size() callable inside @numba.njit (COMM_WORLD only)."""

import numba
import numba_mpi


@numba.njit
def rank_and_size():
    return numba_mpi.rank(), numba_mpi.size()


def main(comm=None):
    myrank, numproc = rank_and_size()
    print("Hello, world! I'm process %d of %d." % (myrank, numproc))
    return [myrank, numproc]


if __name__ == "__main__":
    print(main())
