"""send/recv with boostmpi (Table 4.2; emulated): destination first, value= keyword."""

import numpy

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    if comm.rank == 0:
        comm.send(1, 11, value=numpy.array([1.0, 2.0, 3.0, 4.0]))
    elif comm.rank == 1:
        return comm.recv(source=0, tag=11)
    return None


if __name__ == "__main__":
    print(main())
