"""``mpi4jax``: an optional column, loaded only when the ``mpi4jax`` package is installed.

mpi4jax's calls live inside ``jax.jit`` code and are functional (they return new arrays;
no ``isend``/``irecv``). It is not a dependency of mpiworkbench and is not installed in
the reference environment, so this backend has never been exercised here: importing this
module without mpi4jax raises :class:`BackendUnavailableError` and the registry reports the
column as unavailable instead of pretending.
"""

from __future__ import annotations

from mpiworkbench.backends.base import BackendUnavailableError
try:  # pragma: no cover - depends on the environment
    import mpi4jax as _mpi4jax  # noqa: F401
except ImportError as exc:
    raise BackendUnavailableError(
        "backend 'mpi4jax' is unavailable here: the optional package mpi4jax is not installed "
        "(pip install mpi4jax; it needs JAX). mpiworkbench never requires it."
    ) from exc

raise BackendUnavailableError(  # pragma: no cover
    "mpi4jax is installed, but mpiworkbench has no mpi4jax column yet: it could not be "
    "tested in the environment it was written in, so it is not offered untested"
)
