"""bcast with pyMPI (Table 4.5; emulated): the value is returned."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    data = numpy.arange(4) * 10.0 if mpi.rank == 0 else None
    return mpi.bcast(data, 0)


if __name__ == "__main__":
    print(main())
