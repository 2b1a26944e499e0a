"""bcast with the object API: every rank gets the root's object back."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    data = np.arange(4) * 10.0 if comm.rank == 0 else None
    return comm.bcast(data, root=0)


if __name__ == "__main__":
    print(main())
