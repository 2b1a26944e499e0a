"""gather with pypar (Table 4.8; emulated): arrays concatenated along axis 0."""

import numpy

from mpiworkbench.syntax.historic import pypar
def main():
    myrank = pypar.rank()
    table = pypar.gather(numpy.array([myrank, myrank**2], 'd'), 0)
    return table if myrank == 0 else None


if __name__ == "__main__":
    print(main())
