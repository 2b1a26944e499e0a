"""Sendrecv with mpi4jax: the ghost comes back as a new array (not filled from MPI_PROC_NULL)."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    right = comm.rank + 1 if comm.rank + 1 < comm.size else MPI.PROC_NULL
    left = comm.rank - 1 if comm.rank > 0 else MPI.PROC_NULL
    ghost = jnp.full(3, -1.0)
    received = mpi4jax.sendrecv(jnp.full(3, float(comm.rank)), ghost, source=left, dest=right, comm=comm)
    # From MPI_PROC_NULL nothing arrives, and mpi4jax's new array is not our ghost: keep ours.
    return ghost if left == MPI.PROC_NULL else received


if __name__ == "__main__":
    print(main())
