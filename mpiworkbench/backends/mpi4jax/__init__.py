"""``mpi4jax``: MPI calls on JAX arrays (the backend is :mod:`.backend`).

This face imports neither jax nor mpi4jax: it holds the name and what mpi4jax cannot do,
so the backend, its loops and the syntax lessons all say it the same way.

mpi4jax (Häfner & Vicentini) wraps MPI calls as XLA primitives, so communication can sit
inside ``jax.jit``-compiled code. Its calls return *new* arrays (JAX arrays are immutable);
the backend copies the result into the caller's ``out``. It has no non-blocking calls: every
operation is an ordered custom call that completes before the next one. It is optional
(``make install-mpi4jax`` builds it from source; the Makefile says why and how).
"""

from __future__ import annotations

NAME = "mpi4jax"

#: Operations mpi4jax 0.9 lacks entirely, and why.
UNSUPPORTED: dict[str, str] = {
    "isend": "mpi4jax 0.9 has no non-blocking calls (no MPI_Isend): each call completes in order inside XLA",
    "irecv": "mpi4jax 0.9 has no non-blocking calls (no MPI_Irecv): each call completes in order inside XLA",
    "counts": "mpi4jax 0.9 has no *v collectives (Gatherv, Allgatherv, Scatterv): equal counts only",
}

#: Benchmarks that need a non-blocking window of messages (what ``isend``/``irecv`` are for).
NONBLOCKING_BENCHMARKS = ("bw", "bibw")

__all__ = ["NAME", "UNSUPPORTED", "NONBLOCKING_BENCHMARKS"]
