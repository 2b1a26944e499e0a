"""send/recv with pyMPI (Table 4.2; emulated): recv returns (message, status)."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    if mpi.rank == 0:
        mpi.send(numpy.array([1.0, 2.0, 3.0, 4.0]), 1, tag=11)
    elif mpi.rank == 1:
        message, status = mpi.recv(0, tag=11)
        return message
    return None


if __name__ == "__main__":
    print(main())
