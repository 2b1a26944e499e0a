"""send/receive with Scientific.MPI (Table 4.2; emulated): receive returns (data, source, tag, count)."""

import numpy

from mpiworkbench.syntax.historic import scientific_mpi as MPI
def main():
    comm = MPI.world.duplicate()
    if comm.rank == 0:
        comm.send(numpy.array([1.0, 2.0, 3.0, 4.0]), 1, 11)
    elif comm.rank == 1:
        data, source, tag, count = comm.receive(numpy.zeros(4), 0, 11)
        return data
    return None


if __name__ == "__main__":
    print(main())
