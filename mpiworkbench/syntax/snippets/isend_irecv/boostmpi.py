"""isend/irecv with boostmpi (Table 4.4; emulated): wait() on the receive returns the value."""

import numpy

from mpiworkbench.syntax.historic import boostmpi
def main():
    comm = boostmpi.world
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    request = comm.irecv(source=left)
    sent = comm.isend(right, value=numpy.full(3, float(comm.rank)))
    ghost = request.wait()
    sent.wait()
    return ghost


if __name__ == "__main__":
    print(main())
