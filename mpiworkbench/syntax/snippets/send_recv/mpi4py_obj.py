"""send/recv with mpi4py's object API: the received object is returned (pickle)."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    if comm.rank == 0:
        comm.send(np.array([1.0, 2.0, 3.0, 4.0]), dest=1, tag=11)
    elif comm.rank == 1:
        return comm.recv(source=0, tag=11)
    return None


if __name__ == "__main__":
    print(main())
