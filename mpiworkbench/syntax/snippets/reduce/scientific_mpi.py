"""reduce with Scientific.MPI (Table 4.6; emulated): send and receive arrays, MPI.sum."""

import numpy

from mpiworkbench.syntax.historic import scientific_mpi as MPI
def main():
    comm = MPI.world.duplicate()
    mine = numpy.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    total = numpy.zeros(2)
    comm.reduce(mine, total, MPI.sum, 0)
    return total if comm.rank == 0 else None


if __name__ == "__main__":
    print(main())
