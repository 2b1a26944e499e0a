"""broadcast with boostmpi (Table 4.5; emulated): communicator first, value returned."""

import numpy

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    data = numpy.arange(4) * 10.0 if comm.rank == 0 else None
    return boostmpi.broadcast(comm, data, 0)


if __name__ == "__main__":
    print(main())
