"""Send/recv with mpi4jax: recv takes a template array and returns a *new* one."""

import jax
import jax.numpy as jnp
import mpi4jax
from mpi4py import MPI

jax.config.update("jax_enable_x64", True)  # JAX computes in 32 bits unless told


def main(comm=MPI.COMM_WORLD):
    if comm.rank == 0:
        mpi4jax.send(jnp.array([1.0, 2.0, 3.0, 4.0]), dest=1, tag=11, comm=comm)
    elif comm.rank == 1:
        return mpi4jax.recv(jnp.empty(4), source=0, tag=11, comm=comm)
    return None


if __name__ == "__main__":
    print(main())
