"""isend/irecv with the object API: wait() returns the received object."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    receive = comm.irecv(source=left)
    send = comm.isend(np.full(3, float(comm.rank)), dest=right)
    ghost = receive.wait()
    send.wait()
    return ghost


if __name__ == "__main__":
    print(main())
