"""The one communication interface every backend implements, and its typed errors.

This module is longer than 300 lines because it is mostly the interface's documentation:
every method of :class:`Backend` states its parameters and return value once, for all
backends.

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

from typing import Any, Callable, ClassVar, Sequence

from mpiworkbench.backends import api_loops
from mpiworkbench.core import mpi

#: A timed benchmark loop: ``loop(buffers, nbytes, iterations, warmup) -> seconds`` on this
#: rank. *buffers* is duck-typed: ``send``/``recv`` (uint8 arrays) and ``send_f64``/
#: ``recv_f64`` (float64 views of the same memory), as :class:`mpiworkbench.bench.buffers.Buffers`.
Loop = Callable[[Any, int, int, int], float]

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

    Class attributes describe the backend for the registry: ``name``; ``summary``;
    ``unsupported`` (operation → reason, for operations it lacks entirely); ``limits``
    (short notes on partial support: dtypes, operators, communicators); ``objects``
    (whether arbitrary Python objects travel).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        The communicator (``None``: ``COMM_WORLD``).

    Raises
    ------
    NotSupportedError
        When the backend cannot use *comm*.
    """

    name: ClassVar[str] = "?"
    summary: ClassVar[str] = ""
    unsupported: ClassVar[dict[str, str]] = {}
    limits: ClassVar[tuple[str, ...]] = ()
    objects: ClassVar[bool] = False

    def __init__(self, comm=None):
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

    # -- timed benchmark loops -----------------------------------------------------------
    @classmethod
    def make_loop(cls, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
        """The backend's timed loop of one micro-benchmark (the one entry point for loops).

        The default times the unified interface on an instance over *comm*
        (:mod:`mpiworkbench.backends.api_loops`); backends with loops of their own (C in C,
        numba-mpi in ``@njit``, mpi4py with bound methods) override it.

        Parameters
        ----------
        benchmark : str
            A benchmark name of :mod:`mpiworkbench.bench.catalog` (``pingpong``, ``bw``,
            ``bibw``, ``sendrecv``, a collective, ``bcast_linear``, ``bcast_binomial``).
        comm : mpi4py.MPI.Comm
            The communicator the loop runs on.
        mode : {"osu", "block"}
            Collectives: time each call with a barrier after it outside the timer
            (``osu``) or the whole loop as one block (``block``).
        window : int
            Messages in flight per iteration of ``bw``/``bibw``.

        Returns
        -------
        Loop
            ``loop(buffers, nbytes, iterations, warmup) -> seconds`` timed on this rank.

        Raises
        ------
        NotSupportedError
            When this backend cannot run *benchmark* on *comm*.
        """
        return api_loops.loop_over(cls(comm), benchmark, mode, window)

    # -- environment -------------------------------------------------------------------
    def wtime(self) -> float:
        """Wall-clock time (``MPI_Wtime``).

        Returns
        -------
        float
            Seconds since an arbitrary time in the past.
        """
        return self._wtime()

    def barrier(self) -> None:
        """Block until every rank of the communicator has called it (``MPI_Barrier``)."""
        raise NotImplementedError

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest: int, tag: int = 0) -> None:
        """Send *data* to rank *dest* (``MPI_Send``; blocking).

        Parameters
        ----------
        data : numpy.ndarray or object
            What to send (any Python object on an object backend).
        dest : int
            Destination rank (``PROC_NULL``: nothing is sent).
        tag : int
            Message tag.
        """
        raise NotImplementedError

    def recv(self, out=None, source: int | None = None, tag: int | None = None):
        """Receive one message (``MPI_Recv``).

        Parameters
        ----------
        out : numpy.ndarray, optional
            Receive buffer, filled in place (required by buffer backends).
        source : int, optional
            Source rank (``None``: any source).
        tag : int, optional
            Message tag (``None``: any tag).

        Returns
        -------
        numpy.ndarray or object
            *out*, or the received object when *out* is ``None`` on an object backend.
        """
        raise NotImplementedError

    def sendrecv(self, data, dest: int, out=None, source: int | None = None, sendtag: int = 0,
                 recvtag: int | None = None):
        """Send *data* to *dest* and receive from *source* in one call (``MPI_Sendrecv``).

        Parameters
        ----------
        data : numpy.ndarray or object
            What to send.
        dest : int
            Destination rank.
        out : numpy.ndarray, optional
            Receive buffer (required by buffer backends).
        source : int, optional
            Source rank (``None``: any source).
        sendtag : int
            Tag of the outgoing message.
        recvtag : int, optional
            Tag of the incoming message (``None``: any tag).

        Returns
        -------
        numpy.ndarray or object
            What was received (*out* when given).
        """
        raise NotImplementedError

    def isend(self, data, dest: int, tag: int = 0) -> Request:
        """Start sending *data* to *dest* (``MPI_Isend``); do not modify *data* until waited.

        Parameters
        ----------
        data, dest, tag
            As :meth:`send`.

        Returns
        -------
        Request
            Complete it with :meth:`wait` or :meth:`waitall`.
        """
        raise NotImplementedError

    def irecv(self, out=None, source: int | None = None, tag: int | None = None) -> Request:
        """Start receiving one message (``MPI_Irecv``).

        Parameters
        ----------
        out, source, tag
            As :meth:`recv`.

        Returns
        -------
        Request
            :meth:`wait` on it returns what was received.
        """
        raise NotImplementedError

    def wait(self, request: Request):
        """Complete one request (``MPI_Wait``).

        Parameters
        ----------
        request : Request
            From :meth:`isend` or :meth:`irecv`.

        Returns
        -------
        numpy.ndarray, object or None
            The received data for an ``irecv``, ``None`` for an ``isend``.
        """
        raise NotImplementedError

    def waitall(self, requests: Sequence[Request]) -> list:
        """Complete all *requests* (``MPI_Waitall``).

        Parameters
        ----------
        requests : sequence of Request

        Returns
        -------
        list
            What :meth:`wait` would return, per request, in order.
        """
        raise NotImplementedError

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root: int = 0):
        """Broadcast *root*'s *data* to every rank (``MPI_Bcast``).

        Parameters
        ----------
        data : numpy.ndarray or object
            On *root*, what to send; elsewhere the buffer filled in place (buffer
            backends) or ignored (object backend).
        root : int
            The sending rank.

        Returns
        -------
        numpy.ndarray or object
            *root*'s data, on every rank.
        """
        raise NotImplementedError

    def reduce(self, data, op: str = "sum", root: int = 0, out=None):
        """Combine every rank's *data* with *op* onto *root* (``MPI_Reduce``).

        Parameters
        ----------
        data : numpy.ndarray or number
            This rank's contribution.
        op : {"sum", "prod", "min", "max"}
            The reduction operator.
        root : int
            The rank that receives the result.
        out : numpy.ndarray, optional
            Result buffer on *root*.

        Returns
        -------
        numpy.ndarray, number or None
            The result on *root*, ``None`` elsewhere.
        """
        raise NotImplementedError

    def allreduce(self, data, op: str = "sum", out=None):
        """Combine every rank's *data* with *op*; every rank gets the result (``MPI_Allreduce``).

        Parameters
        ----------
        data, op
            As :meth:`reduce`.
        out : numpy.ndarray, optional
            Result buffer.

        Returns
        -------
        numpy.ndarray or number
            The result, on every rank.
        """
        raise NotImplementedError

    def gather(self, data, root: int = 0, out=None, counts: Sequence[int] | None = None):
        """Collect every rank's *data* on *root* (``MPI_Gather``; ``MPI_Gatherv`` with *counts*).

        Parameters
        ----------
        data : numpy.ndarray or object
            This rank's contribution.
        root : int
            The collecting rank.
        out : numpy.ndarray, optional
            Result buffer on *root*: shape ``(size, *data.shape)``, or ``sum(counts)``
            elements with *counts*.
        counts : sequence of int, optional
            Elements per rank (uneven contributions).

        Returns
        -------
        numpy.ndarray, list or None
            Rank ``j``'s contribution at ``[j]`` (flat with *counts*) on *root*, ``None``
            elsewhere.
        """
        raise NotImplementedError

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        """Collect every rank's *data* on every rank (``MPI_Allgather``/``MPI_Allgatherv``).

        Parameters
        ----------
        data, counts
            As :meth:`gather`.
        out : numpy.ndarray, optional
            Result buffer, laid out as for :meth:`gather`.

        Returns
        -------
        numpy.ndarray or list
            Rank ``j``'s contribution at ``[j]`` (flat with *counts*).
        """
        raise NotImplementedError

    def scatter(self, data, root: int = 0, out=None, counts: Sequence[int] | None = None):
        """Hand rank ``j`` the ``j``-th part of *root*'s *data* (``MPI_Scatter``/``MPI_Scatterv``).

        Parameters
        ----------
        data : numpy.ndarray or sequence
            On *root*: shape ``(size, ...)``, or ``sum(counts)`` elements with *counts*;
            ignored elsewhere.
        root : int
            The sending rank.
        out : numpy.ndarray, optional
            This rank's receive buffer (required by buffer backends).
        counts : sequence of int, optional
            Elements per rank.

        Returns
        -------
        numpy.ndarray or object
            This rank's part.
        """
        raise NotImplementedError

    def alltoall(self, data, out=None):
        """Rank ``i`` sends its ``data[j]`` to rank ``j`` and receives ``j``'s ``data[i]``
        (``MPI_Alltoall``).

        Parameters
        ----------
        data : numpy.ndarray or sequence
            Shape ``(size, ...)``: one block per destination rank.
        out : numpy.ndarray, optional
            Receive buffer of the same layout.

        Returns
        -------
        numpy.ndarray or list
            Block ``j`` is what rank ``j`` sent to this rank.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release what the backend holds (nothing by default)."""
