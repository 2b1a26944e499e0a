"""allreduce with pyMPI (Table 4.7; emulated)."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    mine = numpy.array([mpi.rank + 1.0, 2.0 * (mpi.rank + 1)])
    return mpi.allreduce(mine, mpi.SUM)


if __name__ == "__main__":
    print(main())
