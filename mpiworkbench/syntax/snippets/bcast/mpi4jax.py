"""Bcast with mpi4jax: every rank passes an array of the right shape and gets the root's."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    data = jnp.arange(4) * 10.0 if comm.rank == 0 else jnp.empty(4)
    return mpi4jax.bcast(data, root=0, comm=comm)


if __name__ == "__main__":
    print(main())
