"""One communication interface over every runnable Python MPI backend.

The thesis (Ch. 7, Future Work) proposes "a unified wrapper of MPI routines … any of these
modules can be replaced by one of the alternatives, and the same script should still
work". This is that wrapper. Every backend implements the twelve routines of thesis
Table 4.1 — ``send recv sendrecv isend irecv bcast reduce allreduce gather allgather
scatter alltoall`` — plus ``barrier``, ``wait``/``waitall``, ``rank``/``size`` and
``wtime``, with the same signatures (see :mod:`mpiworkbench.backends.base` for the
conventions):

==============  =====================================================================
``mpi4py-obj``  mpi4py lower-case methods (pickle; any Python object)
``mpi4py-buf``  mpi4py upper-case methods (NumPy buffers, no copies)
``c``           the same calls in C, compiled with the venv's ``mpicc`` on first use,
                loaded with ctypes: the reference the thesis measured every module against
``numba-mpi``   calls made inside ``@numba.njit`` functions (COMM_WORLD only, …)
``mpi4jax``     optional: mpi4jax's calls on JAX arrays, each ``jax.jit``-compiled once
                (no isend/irecv); offered only where mpi4jax is installed
                (``make install-mpi4jax``), else reported unavailable with how to install it
==============  =====================================================================

The names and where each backend lives are in :mod:`mpiworkbench.backends.registry`
(the one list of backend names); this module re-exports it. Backends load lazily on first
use: importing this package imports neither mpi4py nor numba, and an unavailable backend
raises :class:`BackendUnavailableError` saying why and what to do. What a backend cannot
do raises :class:`NotSupportedError` (``not supported by numba-mpi: …``);
:func:`capabilities` lists it all up front.

Each backend also owns its timed benchmark loops, behind one entry point,
:meth:`Backend.make_loop`; :func:`timed_loop` finds it by name (``api:<name>`` gets the
generic loops over this interface, :mod:`mpiworkbench.backends.api_loops`).

Calls are thin — the hot path is the MPI call plus a dict lookup or two — so solvers can
use them for halo exchanges and benchmarks can time them. Checks are local to the
calling rank: a wrong call raises on that rank (under ``python -m mpi4py`` that aborts
the job; in a :class:`~mpiworkbench.Workbench` it surfaces as a rank failure).

Example (the same body runs with any backend name)::

    import numpy as np
    from mpiworkbench.backends import get_backend
    be = get_backend("mpi4py-buf")                 # or "mpi4py-obj", "c", "numba-mpi"
    right = (be.rank + 1) % be.size
    left = (be.rank - 1) % be.size
    ghost = np.empty(4)
    be.sendrecv(np.full(4, float(be.rank)), right, out=ghost, source=left)
    total = be.allreduce(np.array([1.0]), op="sum")  # == [size]
    parts = be.gather(np.array([be.rank]), root=0)   # rank 0: [[0], [1], …]; others None
"""

from __future__ import annotations

from mpiworkbench.backends.base import (
    EXTRA_OPERATIONS,
    MPI_ROUTINES,
    OPERATIONS,
    REDUCTION_OPS,
    Backend,
    BackendUnavailableError,
    Loop,
    NotSupportedError,
    Request,
)
from mpiworkbench.backends.registry import (
    API_PREFIX,
    availability,
    environment,
    backend_class,
    backend_names,
    bench_names,
    capabilities,
    get_backend,
    historic_names,
    implemented_names,
    is_available,
    timed_loop,
)

__all__ = [
    "API_PREFIX",
    "availability",
    "environment",
    "Backend",
    "BackendUnavailableError",
    "EXTRA_OPERATIONS",
    "Loop",
    "MPI_ROUTINES",
    "NotSupportedError",
    "OPERATIONS",
    "REDUCTION_OPS",
    "Request",
    "backend_class",
    "backend_names",
    "bench_names",
    "capabilities",
    "get_backend",
    "historic_names",
    "implemented_names",
    "is_available",
    "timed_loop",
]
