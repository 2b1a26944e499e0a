"""allreduce with Scientific.MPI (Table 4.7; emulated): pre-allocated receive array."""

import numpy

from mpiworkbench.syntax.historic import scientific_mpi as MPI
def main():
    comm = MPI.world.duplicate()
    mine = numpy.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    total = numpy.zeros(2)
    comm.allreduce(mine, total, MPI.sum)
    return total


if __name__ == "__main__":
    print(main())
