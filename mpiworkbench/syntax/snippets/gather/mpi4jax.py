"""Gather with mpi4jax: a (size, 2) array on the root; the others get their input back."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    mine = jnp.array([comm.rank, comm.rank**2], dtype=float)
    table = mpi4jax.gather(mine, root=0, comm=comm)
    return table if comm.rank == 0 else None


if __name__ == "__main__":
    print(main())
