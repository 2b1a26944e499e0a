"""send/receive with pypar (Table 4.2; emulated): use_buffer=True pairs with receive(buffer=…)."""

import numpy

from mpiworkbench.syntax.historic import pypar
def main():
    if pypar.rank() == 0:
        pypar.send(numpy.array([1.0, 2.0, 3.0, 4.0]), 1, tag=11)
    elif pypar.rank() == 1:
        return pypar.receive(0, tag=11)
    return None


if __name__ == "__main__":
    print(main())
