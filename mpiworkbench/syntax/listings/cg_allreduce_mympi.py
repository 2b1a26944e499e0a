"""Thesis §6.2.2: summing the global inner product with MYMPI (emulated): mpi_reduce + mpi_bcast, values returned."""

import numpy
from numpy import array  # the listings write array(...) for numpy.array

from mpiworkbench.syntax.historic import mympi as mpi
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
    # --- thesis listing (MYMPI has no allreduce: reduce to 0, then broadcast) ---
    a2s=array(a2s,'d')
    a2=array(0.,'d')
    a2=mpi.mpi_reduce(a2s,1,mpi.MPI_DOUBLE,mpi.MPI_SUM,0,comm)
    a2=mpi.mpi_bcast(a2,1,mpi.MPI_DOUBLE,0,comm)
    return float(numpy.asarray(a2).reshape(-1)[0])


def check(result, rank, size):
    want = sum(numpy.inner(*local_vectors(r)) for r in range(size))
    return abs(result - want) <= 1e-12 * max(1.0, abs(want))
