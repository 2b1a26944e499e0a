"""broadcast with pypar (Table 4.5; emulated): arrays are broadcast in place."""

import numpy

from mpiworkbench.syntax.historic import pypar
def main():
    data = numpy.arange(4) * 10.0 if pypar.rank() == 0 else numpy.zeros(4)
    pypar.broadcast(data, 0)
    return data


if __name__ == "__main__":
    print(main())
