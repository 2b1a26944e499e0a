"""reduce with boostmpi (Table 4.6; emulated): the operation is a Python function."""

import numpy

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    mine = numpy.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    return boostmpi.reduce(comm, mine, lambda x, y: x + y, 0)


if __name__ == "__main__":
    print(main())
