"""reduce with pypar (Table 4.6, thesis §2.4; emulated): arrays only, buffer= on the root."""

import numpy

from mpiworkbench.syntax.historic import pypar
def main():
    myrank = pypar.rank()
    mine = numpy.array([myrank + 1.0, 2.0 * (myrank + 1)])
    total = numpy.zeros(2)
    pypar.reduce(mine, pypar.SUM, 0, buffer=total)
    return total if myrank == 0 else None


if __name__ == "__main__":
    print(main())
