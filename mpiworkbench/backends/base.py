"""The one communication interface every backend implements, and its typed errors.

A :class:`Backend` wraps one communicator. The twelve routines of thesis Table 4.1
(:data:`OPERATIONS`) plus ``barrier``, ``wait``/``waitall``, ``rank``/``size`` and
``wtime`` have the same signature on every backend, so a script written against one
runs on any other (the thesis's "unified wrapper", its Future Work).

Conventions (the same on every backend):

* ``data`` is what this rank contributes, ``out`` the receive buffer. Buffer backends
  fill ``out`` in place and return it; they need ``out`` where the receiver cannot know
  the shape (``recv``, ``sendrecv``, ``irecv``, ``scatter``). The object backend accepts
  ``out=None`` and then returns the received Python object; given ``out`` it copies the
  received value into it, so a script that always passes ``out`` runs everywhere.
* ``gather``/``allgather`` return an array of shape ``(size, *data.shape)`` (rank ``j``'s
  contribution at ``[j]``); with ``counts`` (elements per rank, the ``*v`` variants) a
  flat array of ``sum(counts)`` elements. ``scatter`` and ``alltoall`` take that layout
  on the sending side. Non-root ranks get ``None`` from ``reduce`` and ``gather``.
* ``op`` is a name: ``"sum"``, ``"prod"``, ``"min"`` or ``"max"``.
* Receiving from ``PROC_NULL`` completes at once and leaves ``out`` untouched.
* What a backend cannot do raises :class:`NotSupportedError` with the reason, never a
  silent fallback.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

#: The twelve routines of thesis Table 4.1, in the thesis's order.
OPERATIONS: tuple[str, ...] = (
    "send",
    "recv",
    "sendrecv",
    "isend",
    "irecv",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "allgather",
    "scatter",
    "alltoall",
)
#: The other calls of the interface (every backend has them).
EXTRA_OPERATIONS: tuple[str, ...] = ("barrier", "wait", "waitall", "rank", "size", "wtime")
#: Reduction operators by name.
REDUCTION_OPS: tuple[str, ...] = ("sum", "prod", "min", "max")
#: The MPI C routine each operation stands for (the C column of every table).
MPI_ROUTINES: dict[str, str] = {
    "send": "MPI_Send",
    "recv": "MPI_Recv",
    "sendrecv": "MPI_Sendrecv",
    "isend": "MPI_Isend",
    "irecv": "MPI_Irecv",
    "bcast": "MPI_Bcast",
    "reduce": "MPI_Reduce",
    "allreduce": "MPI_Allreduce",
    "gather": "MPI_Gather",
    "allgather": "MPI_Allgather",
    "scatter": "MPI_Scatter",
    "alltoall": "MPI_Alltoall",
}


class NotSupportedError(NotImplementedError):
    """A backend cannot do what was asked: ``not supported by <backend>: <why>``."""

    def __init__(self, backend: str, why: str):
        super().__init__(f"not supported by {backend}: {why}")
        self.backend = backend
        self.why = why


class BackendUnavailableError(ImportError):
    """A backend cannot be loaded here (package missing, no compiler, …), with what to do."""


def noncontiguous_error(backend: str, operation: str, array: Any) -> ValueError:
    """The clear error for a strided NumPy view handed to a buffer-based call."""
    shape = getattr(array, "shape", "?")
    strides = getattr(array, "strides", "?")
    return ValueError(
        f"{backend} {operation}: the buffer is not contiguous (shape {shape}, strides {strides}); "
        "pass numpy.ascontiguousarray(x) (a copy) or, with mpi4py-buf, describe the layout "
        "with a derived datatype (MPI.DOUBLE.Create_vector / Create_subarray)"
    )


def first_strided(*arrays: Any) -> Any:
    """The first argument that is a non-contiguous array (for error messages)."""
    for array in arrays:
        flags = getattr(array, "flags", None)
        if flags is not None and not (flags.c_contiguous or flags.f_contiguous):
            return array
    return arrays[0]


class Request:
    """A pending ``isend``/``irecv``: the backend's own handle and the receive buffer."""

    __slots__ = ("handle", "out")

    def __init__(self, handle: Any, out: Any = None):
        self.handle = handle
        self.out = out


class Backend:
    """One communicator, the unified interface. Subclasses implement every method.

    Class attributes describe the backend for the registry: ``name``; ``unsupported``
    (operation → reason, for operations it lacks entirely); ``limits`` (short notes on
    partial support: dtypes, operators, communicators); ``objects`` (whether arbitrary
    Python objects travel).
    """

    name: ClassVar[str] = "?"
    summary: ClassVar[str] = ""
    unsupported: ClassVar[dict[str, str]] = {}
    limits: ClassVar[tuple[str, ...]] = ()
    objects: ClassVar[bool] = False

    def __init__(self, comm=None):
        from mpiworkbench.core import mpi
        MPI = mpi.MPI()
        self.comm = mpi.resolve_comm(comm)
        self.rank: int = self.comm.Get_rank()
        self.size: int = self.comm.Get_size()
        self.PROC_NULL: int = MPI.PROC_NULL
        self.ANY_SOURCE: int = MPI.ANY_SOURCE
        self.ANY_TAG: int = MPI.ANY_TAG
        self._wtime = MPI.Wtime

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} rank {self.rank} of {self.size}>"

    def _unsupported(self, why: str) -> NotSupportedError:
        return NotSupportedError(self.name, why)

    # -- environment -------------------------------------------------------------------
    def wtime(self) -> float:
        """Wall-clock time in seconds (``MPI_Wtime``)."""
        return self._wtime()

    def barrier(self) -> None:
        raise NotImplementedError

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest: int, tag: int = 0) -> None:
        raise NotImplementedError

    def recv(self, out=None, source: int | None = None, tag: int | None = None):
        raise NotImplementedError

    def sendrecv(self, data, dest: int, out=None, source: int | None = None, sendtag: int = 0, recvtag: int | None = None):
        raise NotImplementedError

    def isend(self, data, dest: int, tag: int = 0) -> Request:
        raise NotImplementedError

    def irecv(self, out=None, source: int | None = None, tag: int | None = None) -> Request:
        raise NotImplementedError

    def wait(self, request: Request):
        """Complete one request; returns the received data (``irecv``) or ``None``."""
        raise NotImplementedError

    def waitall(self, requests: Sequence[Request]) -> list:
        """Complete all requests; returns what :meth:`wait` would, per request."""
        raise NotImplementedError

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root: int = 0):
        raise NotImplementedError

    def reduce(self, data, op: str = "sum", root: int = 0, out=None):
        raise NotImplementedError

    def allreduce(self, data, op: str = "sum", out=None):
        raise NotImplementedError

    def gather(self, data, root: int = 0, out=None, counts: Sequence[int] | None = None):
        raise NotImplementedError

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        raise NotImplementedError

    def scatter(self, data, root: int = 0, out=None, counts: Sequence[int] | None = None):
        raise NotImplementedError

    def alltoall(self, data, out=None):
        raise NotImplementedError

    def close(self) -> None:
        """Release what the backend holds (nothing by default)."""
