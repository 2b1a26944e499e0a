"""Thesis §6.1.3: mpi4py's ghost exchange in x — a derived vector datatype and Sendrecv.

mpi4py has Sendrecv and MPI_PROC_NULL, so the exchange has the C version's shape: two
Sendrecv calls on a strided plane described by ``Create_vector``, no parity, no null
checks. Listing lines 1–7; one fix: line 2 prints ``newtype_x.Commit()`` for the
``new_type_x`` of line 1.
"""

from mpi4py import MPI as mpi

from mpiworkbench.syntax.listings import wave_setup
def main(comm=None):
    from mpiworkbench.syntax.historic import communicator
    comm = comm or communicator()
    Lx, Ly, Lz = wave_setup.Lx, wave_setup.Ly, wave_setup.Lz
    u = wave_setup.subdomain(comm.rank)
    left = comm.rank - 1 if comm.rank > 0 else mpi.PROC_NULL
    right = comm.rank + 1 if comm.rank + 1 < comm.size else mpi.PROC_NULL
    # send my last plane right / receive my left ghost; send my first plane left / receive my right ghost
    pos_x = [Lx, 0, 1, Lx + 1]
    ranks_x = [right, left, left, right]
    tags_x = [0, 0, 1, 1]
    # --- thesis listing, §6.1.3 "mpi4py version of the exchanging operations in x direction" ---
    new_type_x = mpi.DOUBLE.Create_vector((Ly+2)*(Lz+2), 1, (Lx+2))
    new_type_x.Commit()
    ut = u.reshape(-1)  # convert to 1-d array
    comm.Sendrecv([ut[(pos_x[0]):], 1, new_type_x], ranks_x[0], tags_x[0],
                  [ut[(pos_x[1]):], 1, new_type_x], ranks_x[1], tags_x[1])
    comm.Sendrecv([ut[(pos_x[2]):], 1, new_type_x], ranks_x[2], tags_x[2],
                  [ut[(pos_x[3]):], 1, new_type_x], ranks_x[3], tags_x[3])
    # ------------------------------------------------------------------------------------------
    new_type_x.Free()
    return u


def check(result, rank, size):
    return wave_setup.check(result, rank, size)
