"""isend/irecv with pyMPI (Table 4.4; emulated): the message is on the request after wait()."""

import numpy

from mpiworkbench.syntax.historic import pympi as mpi
def main():
    right, left = (mpi.rank + 1) % mpi.size, (mpi.rank - 1) % mpi.size
    request = mpi.irecv(left)
    sent = mpi.isend(numpy.full(3, float(mpi.rank)), right)
    request.wait()
    sent.wait()
    return request.message


if __name__ == "__main__":
    print(main())
