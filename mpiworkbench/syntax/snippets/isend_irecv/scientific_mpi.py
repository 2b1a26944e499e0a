"""nonblockingSend/nonblockingReceive with Scientific.MPI (Table 4.4; emulated)."""

import numpy

from mpiworkbench.syntax.historic import scientific_mpi as MPI
def main():
    comm = MPI.world.duplicate()
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    ghost = numpy.zeros(3)
    request = comm.nonblockingReceive(ghost, left)
    sent = comm.nonblockingSend(numpy.full(3, float(comm.rank)), right, 0)
    request.wait()
    sent.wait()
    return ghost


if __name__ == "__main__":
    print(main())
