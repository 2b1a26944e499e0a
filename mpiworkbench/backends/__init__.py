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
``mpi4jax``     optional; listed, and loaded only if ``mpi4jax`` is installed
==============  =====================================================================

Backends load lazily on first use: importing this package imports neither mpi4py nor
numba, and an unavailable backend raises :class:`BackendUnavailableError` saying why
and what to do. What a backend cannot do raises :class:`NotSupportedError`
(``not supported by numba-mpi: …``); :func:`capabilities` lists it all up front.

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

import importlib
from typing import Any

from mpiworkbench.backends.base import (
    EXTRA_OPERATIONS,
    MPI_ROUTINES,
    OPERATIONS,
    REDUCTION_OPS,
    Backend,
    BackendUnavailableError,
    NotSupportedError,
    Request,
)

__all__ = [
    "Backend",
    "BackendUnavailableError",
    "EXTRA_OPERATIONS",
    "MPI_ROUTINES",
    "NotSupportedError",
    "OPERATIONS",
    "REDUCTION_OPS",
    "Request",
    "backend_class",
    "backend_names",
    "capabilities",
    "get_backend",
    "historic_names",
    "is_available",
]

#: name → (module, class). Order = column order of every side-by-side table (C first).
_REGISTRY: dict[str, tuple[str, str]] = {
    "c": ("mpiworkbench.backends.c.backend", "CBackend"),
    "mpi4py-obj": ("mpiworkbench.backends.mpi4py.obj", "Mpi4pyObject"),
    "mpi4py-buf": ("mpiworkbench.backends.mpi4py.buf", "Mpi4pyBuffer"),
    "numba-mpi": ("mpiworkbench.backends.numba_mpi.backend", "NumbaMpi"),
    "mpi4jax": ("mpiworkbench.backends.mpi4jax", "Mpi4jax"),
}

#: What to install when a backend's import fails.
_INSTALL_HINTS: dict[str, str] = {
    "numba-mpi": "pip install numba numba-mpi",
    "mpi4jax": "pip install mpi4jax (optional; needs JAX)",
    "mpi4py-obj": "pip install mpi4py mpich",
    "mpi4py-buf": "pip install mpi4py mpich",
    "c": "pip install mpich (for mpicc) and a C compiler",
}

_classes: dict[str, type[Backend]] = {}


def backend_names() -> list[str]:
    """Every backend the registry knows (runnable here or not), C first."""
    return list(_REGISTRY)


def historic_names() -> list[str]:
    """The five historic modules of the thesis (syntax tables and emulations only)."""
    from mpiworkbench.syntax.historic import HISTORIC_MODULES
    return list(HISTORIC_MODULES)


def _check_name(name: str) -> None:
    if name not in _REGISTRY:
        historic = ""
        try:
            if name in historic_names():
                historic = (
                    f"; {name} is a historic (Python 2) module: its syntax and an emulation "
                    "live in mpiworkbench.syntax.historic"
                )
        except ImportError:
            pass
        raise ValueError(f"unknown backend {name!r}; choose one of {backend_names()}{historic}")


def backend_class(name: str) -> type[Backend]:
    """Import and return the class of backend *name* (raises BackendUnavailableError)."""
    _check_name(name)
    cls = _classes.get(name)
    if cls is None:
        module_name, attr = _REGISTRY[name]
        try:
            module = importlib.import_module(module_name)
        except BackendUnavailableError:
            raise
        except ImportError as exc:
            raise BackendUnavailableError(
                f"backend {name!r} is unavailable here: {exc}; to use it: {_INSTALL_HINTS[name]}"
            ) from exc
        cls = _classes[name] = getattr(module, attr)
    return cls


def get_backend(name: str, comm=None) -> Backend:
    """The backend *name* over *comm* (``None``: ``COMM_WORLD``).

    Raises ``ValueError`` for an unknown name, :class:`BackendUnavailableError` when the
    backend cannot load here, :class:`NotSupportedError` when it cannot use *comm*.
    """
    return backend_class(name)(comm)


def is_available(name: str) -> bool:
    """Whether backend *name* can be loaded here (does not build or compile anything)."""
    try:
        backend_class(name)
    except BackendUnavailableError:
        return False
    return True


def capabilities(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """What each backend can do, from the backend classes themselves.

    Returns ``{name: {"available": bool, "reason": str | None, "summary": str,
    "objects": bool, "limits": [...], "ops": {op: None | reason}}}``: ``ops[op]`` is
    ``None`` when the operation is supported, else why not.
    """
    table: dict[str, dict[str, Any]] = {}
    for name in names or backend_names():
        try:
            cls = backend_class(name)
        except BackendUnavailableError as exc:
            table[name] = {
                "available": False,
                "reason": str(exc),
                "summary": "",
                "objects": False,
                "limits": [],
                "ops": {op: "backend unavailable here" for op in OPERATIONS},
            }
            continue
        table[name] = {
            "available": True,
            "reason": None,
            "summary": cls.summary,
            "objects": cls.objects,
            "limits": list(cls.limits),
            "ops": {op: cls.unsupported.get(op) for op in OPERATIONS},
        }
    return table
