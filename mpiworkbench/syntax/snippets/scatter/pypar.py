"""scatter with pypar (Table 4.10; emulated): the array is split along axis 0."""

import numpy

from mpiworkbench.syntax.historic import pypar
def main():
    numproc = pypar.size()
    return pypar.scatter(numpy.arange(2.0 * numproc), 0)


if __name__ == "__main__":
    print(main())
