"""Thesis §6.2.2: summing the global inner product with mpi4py: Allreduce on buffers."""

import numpy
from numpy import array  # the listings write array(...) for numpy.array

from mpi4py import MPI as mpi


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
    a2s=array(a2s,'d')
    a2=array(0.,'d')
    # --- thesis listing: the buffer form runs unchanged on mpi4py 4 ---
    comm.Allreduce([a2s,mpi.DOUBLE],[ a2,mpi.DOUBLE], op=mpi.SUM)
    # The object form the thesis prints next, comm.allreduce(a2s,a2,op=mpi.SUM), is the
    # mpi4py 1.x signature (sendobj, recvobj, op); since mpi4py 2 recvobj is gone and the
    # value is returned, so today it reads:
    a2_obj=comm.allreduce(a2s,op=mpi.SUM)
    assert a2_obj == a2
    return float(numpy.asarray(a2).reshape(-1)[0])


def check(result, rank, size):
    want = sum(numpy.inner(*local_vectors(r)) for r in range(size))
    return abs(result - want) <= 1e-12 * max(1.0, abs(want))
