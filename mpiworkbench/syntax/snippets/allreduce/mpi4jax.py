"""Allreduce with mpi4jax (differentiable with jax.grad for MPI.SUM)."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    mine = jnp.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    return mpi4jax.allreduce(mine, op=MPI.SUM, comm=comm)


if __name__ == "__main__":
    print(main())
