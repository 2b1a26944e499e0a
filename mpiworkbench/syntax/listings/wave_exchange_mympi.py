"""Thesis §6.1.3: MYMPI's exchange in x (MYMPI emulated): explicit size and datatype, the received
value returned and reshaped by hand.

The thesis prints the message passing to the right neighbour (lines marked "thesis");
the left one is "quite similar" (its words) and is written the same way; the even/odd
order and the skipped exchanges with a missing neighbour (-2) follow the pypar version.
"""

from numpy import array

from mpiworkbench.syntax.historic import mympi as mpi
from mpiworkbench.syntax.listings import wave_setup
Lx, Ly, Lz = wave_setup.Lx, wave_setup.Ly, wave_setup.Lz
size_x = Lz * Ly
tags_x = [0, 1]


def to_right(u, x2, comm, buf_x):
    # even side: send my last plane, then receive the right ghost (thesis lines 1-4)
    mpi.mpi_send(u[1:Lz+1,1:Ly+1,Lx],size_x,mpi.MPI_DOUBLE,x2,\
                 tags_x[0],mpi.MPI_COMM_WORLD)
    u[1:Lz+1,1:Ly+1,Lx+1]=array(mpi.mpi_recv(size_x,mpi.MPI_DOUBLE,\
                                x2,tags_x[1],mpi.MPI_COMM_WORLD)).reshape(Lz,Ly)


def to_left(u, x1, comm, buf_x):
    u[1:Lz+1,1:Ly+1,0]=array(mpi.mpi_recv(size_x,mpi.MPI_DOUBLE,\
                             x1,tags_x[0],mpi.MPI_COMM_WORLD)).reshape(Lz,Ly)
    mpi.mpi_send(u[1:Lz+1,1:Ly+1,1],size_x,mpi.MPI_DOUBLE,x1,\
                 tags_x[1],mpi.MPI_COMM_WORLD)


def main():
    from mpiworkbench.syntax.historic import communicator
    world = communicator()
    comm = None
    myrank = world.Get_rank()
    u = wave_setup.subdomain(myrank)
    x1, x2 = wave_setup.neighbours(myrank, world.Get_size())
    buf_x = array(u[1:Lz+1, 1:Ly+1, 0])
    first, second = (to_right, to_left) if myrank % 2 == 0 else (to_left, to_right)
    for exchange in (first, second):
        neighbour = x2 if exchange is to_right else x1
        if neighbour != -2:
            exchange(u, neighbour, comm, buf_x)
    return u


def check(result, rank, size):
    return wave_setup.check(result, rank, size)


def proc_null_pitfall():
    """Thesis §6.1.3: MYMPI had no real MPI_PROC_NULL — receiving from it gave zeros.

    With MPI_PROC_NULL as the right neighbour of the last rank, the right ghost plane is
    overwritten with zeros instead of being left alone ("It will end up to wrong
    calculation results without any MPI error messages"). Returns that ghost plane.
    """
    from mpiworkbench.syntax.historic import communicator
    myrank = communicator().Get_rank()
    u = wave_setup.subdomain(myrank)
    x2 = mpi.MPI_PROC_NULL
    mpi.mpi_send(u[1:Lz+1,1:Ly+1,Lx],size_x,mpi.MPI_DOUBLE,x2,tags_x[0],mpi.MPI_COMM_WORLD)
    u[1:Lz+1,1:Ly+1,Lx+1]=array(mpi.mpi_recv(size_x,mpi.MPI_DOUBLE,x2,tags_x[1],mpi.MPI_COMM_WORLD)).reshape(Lz,Ly)
    return u[1:Lz+1,1:Ly+1,Lx+1]
