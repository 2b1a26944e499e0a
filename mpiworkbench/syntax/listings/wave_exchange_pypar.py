"""Thesis §6.1.3: pypar's ghost exchange in x, with even/odd ordering and "null" functions.

pypar has neither Sendrecv nor MPI_PROC_NULL, so the thesis orders the blocking calls by
the sub-domain's parity and replaces the exchange with a missing neighbour by a function
that does nothing, chosen once ("function pointers"). Listing lines 1–16 and 1–4, Python 3;
one fix: lines 12–16 call ``sendrecv_even``/``sendrecv_odd``, names the listing never
defines — they are the ``sendrecv_x_even``/``sendrecv_x_odd`` chosen by lines 2–3.
"""

import numpy

from mpiworkbench.syntax.historic import pypar
from mpiworkbench.syntax.listings import wave_setup
u = None  # the listing's functions work on the global array u


# --- thesis listing, §6.1.3 "pypar version of the exchanging operations in x direction" ---
def sendrecv_x_even(myrank, lx, ly, lz, x2, buf_x):
    pypar.send(u[1:lz+1, 1:ly+1, lx], x2, use_buffer=True, bypass=True)
    u[1:lz+1, 1:ly+1, lx+1] = pypar.receive(x2, buffer=buf_x, bypass=True)


def sendrecv_x_even_null(myrank, lx, ly, lz, x2, buf_x):
    pass


def sendrecv_x_odd(myrank, lx, ly, lz, x1, buf_x):
    u[1:lz+1, 1:ly+1, 0] = pypar.receive(x1, buffer=buf_x, bypass=True)
    pypar.send(u[1:lz+1, 1:ly+1, 1], x1, use_buffer=True, bypass=True)


def sendrecv_x_odd_null(myrank, lx, ly, lz, x1, buf_x):
    pass


def comm_x_1(myrank, lx, ly, lz, x1, x2, buf_x):
    sendrecv_even(myrank, lx, ly, lz, x2, buf_x)
    sendrecv_odd(myrank, lx, ly, lz, x1, buf_x)


def comm_x_2(myrank, lx, ly, lz, x1, x2, buf_x):
    sendrecv_odd(myrank, lx, ly, lz, x1, buf_x)
    sendrecv_even(myrank, lx, ly, lz, x2, buf_x)
# ------------------------------------------------------------------------------------------


def main():
    global u, sendrecv_even, sendrecv_odd
    myrank = pypar.rank()
    lx, ly, lz = wave_setup.Lx, wave_setup.Ly, wave_setup.Lz
    u = wave_setup.subdomain(myrank)
    x1, x2 = wave_setup.neighbours(myrank, pypar.size())
    np = [myrank]  # the sub-domain's position in x (1-D split: its rank)
    buf_x = numpy.zeros((lz, ly))
    # --- thesis listing: choose the order and the null functions once --------------------
    comm_x = comm_x_1 if np[0] % 2 == 0 else comm_x_2  # to check the even/odd process
    sendrecv_odd = sendrecv_x_odd if x1 != -2 else sendrecv_x_odd_null
    sendrecv_even = sendrecv_x_even if x2 != -2 else sendrecv_x_even_null
    comm_x(myrank, lx, ly, lz, x1, x2, buf_x)  # do exchange operation in x-direction
    # -------------------------------------------------------------------------------------
    return u


def check(result, rank, size):
    return wave_setup.check(result, rank, size)
