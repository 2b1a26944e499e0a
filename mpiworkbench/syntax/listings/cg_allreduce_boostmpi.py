"""Thesis §6.2.2: summing the global inner product with boostmpi (emulated): all_reduce with a lambda."""

import numpy
from numpy import array  # the listings write array(...) for numpy.array

from mpiworkbench.syntax.historic import boostmpi
def local_vectors(rank: int):
    """This rank's pieces p_s, v_s of two distributed CG vectors (5 entries each)."""
    idx = numpy.arange(5) + 5 * rank
    return numpy.sin(idx + 1.0), numpy.cos(idx + 2.0)


def main():
    from mpiworkbench.syntax.historic import communicator
    comm = communicator()
    p_s, v_s = local_vectors(comm.Get_rank())
    a2_s = numpy.inner(p_s, v_s)  # the same on every module (thesis §6.2.2)
    a2s = a2_s
    comm = boostmpi.world
    # --- thesis listing: the reduction is a user-defined Python function ---
    a2=boostmpi.all_reduce(comm,a2s,lambda x,y:x+y)
    return float(numpy.asarray(a2).reshape(-1)[0])


def check(result, rank, size):
    want = sum(numpy.inner(*local_vectors(r)) for r in range(size))
    return abs(result - want) <= 1e-12 * max(1.0, abs(want))
