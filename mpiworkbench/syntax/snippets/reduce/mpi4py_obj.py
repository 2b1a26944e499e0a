"""reduce with the object API: the result is returned on the root, None elsewhere."""

import numpy as np
from mpi4py import MPI


def main(comm=MPI.COMM_WORLD):
    mine = np.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    return comm.reduce(mine, op=MPI.SUM, root=0)


if __name__ == "__main__":
    print(main())
