"""Send/Recv with mpi4py's buffer API: the receiver pre-allocates (thesis Table 4.2)."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    if comm.rank == 0:
        comm.Send(np.array([1.0, 2.0, 3.0, 4.0]), dest=1, tag=11)
    elif comm.rank == 1:
        data = np.empty(4)
        comm.Recv(data, source=0, tag=11)
        return data
    return None


if __name__ == "__main__":
    print(main())
