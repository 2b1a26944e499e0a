"""Thesis §6.1.3: Scientific.MPI's exchange in x (emulated): receive returns (buffer, source, tag, count).

The thesis prints the message passing to the right neighbour (lines marked "thesis");
the left one is "quite similar" (its words) and is written the same way; the even/odd
order and the skipped exchanges with a missing neighbour (-2) follow the pypar version.
"""

from numpy import array

from mpiworkbench.syntax.historic import scientific_mpi as MPI
from mpiworkbench.syntax.listings import wave_setup
Lx, Ly, Lz = wave_setup.Lx, wave_setup.Ly, wave_setup.Lz
size_x = Lz * Ly
tags_x = [0, 1]


def to_right(u, x2, comm, buf_x):
    comm.send(u[1:Lz+1,1:Ly+1,Lx],x2,100 )  # thesis line 1
    u[1:Lz+1,1:Ly+1,Lx+1], source, tag, count=comm.receive(buf_x,x2)  # thesis line 2


def to_left(u, x1, comm, buf_x):
    u[1:Lz+1,1:Ly+1,0], source, tag, count=comm.receive(buf_x,x1)
    comm.send(u[1:Lz+1,1:Ly+1,1],x1,100 )


def main():
    from mpiworkbench.syntax.historic import communicator
    world = communicator()
    comm = MPI.world.duplicate()
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
