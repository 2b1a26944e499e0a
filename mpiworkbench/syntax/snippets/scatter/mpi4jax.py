"""Scatter with mpi4jax: the root passes (size, 2), the others a (2,) template."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    if comm.rank == 0:
        table = jnp.arange(2.0 * comm.size).reshape(comm.size, 2)
    else:
        table = jnp.empty(2)
    return mpi4jax.scatter(table, root=0, comm=comm)


if __name__ == "__main__":
    print(main())
