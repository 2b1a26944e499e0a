"""reduce with pyMPI (Table 4.6; emulated): the value is returned on the root."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    mine = numpy.array([mpi.rank + 1.0, 2.0 * (mpi.rank + 1)])
    return mpi.reduce(mine, mpi.SUM)


if __name__ == "__main__":
    print(main())
