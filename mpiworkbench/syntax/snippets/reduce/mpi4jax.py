"""Reduce with mpi4jax: the root gets the sum; the others get their input back."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    mine = jnp.array([comm.rank + 1.0, 2.0 * (comm.rank + 1)])
    total = mpi4jax.reduce(mine, op=MPI.SUM, root=0, comm=comm)
    return total if comm.rank == 0 else None


if __name__ == "__main__":
    print(main())
