"""Thesis §2.4.1: the parallel inner product with pypar and NumPy (pypar emulated).

Lines 1–7 are the thesis's listing; the set-up before them (v1, v2, n, myrank, local_n)
is described in its text: two arrays of length n, split evenly over numproc processes.
"""

import numpy

from mpiworkbench.syntax.historic import pypar
n = 3 * 2**9  # the thesis measured 2**18; 1536 splits evenly over 1, 2, 3, 4 and 6 ranks


def vectors():
    return numpy.arange(n, dtype="d"), numpy.linspace(0.0, 1.0, n)


def main():
    numproc, myrank = pypar.size(), pypar.rank()
    local_n = n // numproc  # the thesis splits evenly; n is a power of two
    v1, v2 = vectors()
    # --- thesis listing, §2.4.1 -------------------------------------------------
    vs1 = v1[myrank * local_n:(myrank + 1) * local_n]
    vs2 = v2[myrank * local_n:(myrank + 1) * local_n]
    res_local = numpy.inner(vs1, vs2)
    res_local = numpy.array(res_local, 'd')
    res = numpy.array(0.0, 'd')
    pypar.reduce(res_local, pypar.SUM, 0, buffer=res)
    # ------------------------------------------------------------------------------
    return float(res) if myrank == 0 else None


def check(result, rank, size):
    if rank != 0:
        return result is None
    covered = (n // size) * size  # the listing drops the n % numproc trailing elements
    v1, v2 = vectors()
    want = numpy.inner(v1[:covered], v2[:covered])
    return abs(result - want) <= 1e-12 * abs(want)
