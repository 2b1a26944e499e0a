"""Allgather with mpi4jax: a (size, 2) array on every rank."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    return mpi4jax.allgather(jnp.array([comm.rank, comm.rank**2], dtype=float), comm=comm)


if __name__ == "__main__":
    print(main())
