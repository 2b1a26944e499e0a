"""Alltoall with mpi4jax: the first axis must have one block per rank."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    mine = 100.0 * comm.rank + jnp.arange(comm.size)
    return mpi4jax.alltoall(mine.reshape(comm.size, 1), comm=comm).ravel()


if __name__ == "__main__":
    print(main())
