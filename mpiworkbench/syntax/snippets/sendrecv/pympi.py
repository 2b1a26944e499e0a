"""sendrecv with pyMPI (Table 4.3; emulated). No PROC_NULL: the chain's ends are tested by hand."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    right = mpi.rank + 1
    left = mpi.rank - 1
    mine = numpy.full(3, float(mpi.rank))
    ghost = numpy.full(3, -1.0)
    if 0 <= left and right < mpi.size:
        ghost, status = mpi.sendrecv(mine, right, left)
    elif right < mpi.size:
        mpi.send(mine, right)
    elif 0 <= left:
        ghost, status = mpi.recv(left)
    return ghost


if __name__ == "__main__":
    print(main())
