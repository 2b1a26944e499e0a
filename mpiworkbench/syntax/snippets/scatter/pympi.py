"""scatter with pyMPI (Table 4.10; emulated): the root's sequence is cut into size parts."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    return mpi.scatter(numpy.arange(2.0 * mpi.size) if mpi.rank == 0 else None)


if __name__ == "__main__":
    print(main())
