"""all_reduce with boostmpi (Table 4.7; emulated): lambda x, y: x + y is the sum."""

import numpy

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    mine = numpy.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    return boostmpi.all_reduce(comm, mine, lambda x, y: x + y)


if __name__ == "__main__":
    print(main())
