"""broadcast with Scientific.MPI (Table 4.5; emulated): numerical arrays, in place."""

import numpy

from mpiworkbench.syntax.historic import scientific_mpi as MPI
def main():
    comm = MPI.world.duplicate()
    data = numpy.arange(4) * 10.0 if comm.rank == 0 else numpy.zeros(4)
    comm.broadcast(data, 0)
    return data


if __name__ == "__main__":
    print(main())
