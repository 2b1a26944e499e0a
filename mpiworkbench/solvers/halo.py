"""Ghost-layer (halo) exchange for block-decomposed n-D arrays with one ghost layer.

A rank's local array has shape ``owned + 2`` on every axis: index 0 and -1 are ghosts,
``1 … n`` are the points it owns. Before each stencil update the ghosts on internal
boundaries are filled with the neighbours' outermost owned planes (the "exchange"), and
the ghosts on the physical boundary are set by the boundary condition (here the mirror
``u[-1] = u[1]`` of a homogeneous Neumann condition, thesis §6.1.1).

Exchange variants (same numbers, different MPI):

``sendrecv``
    Blocking ``Sendrecv`` per axis and direction on committed subarray datatypes, with
    ``MPI.PROC_NULL`` at the physical boundary (the thesis's mpi4py version, zero-copy).
``packed``
    The same ``Sendrecv`` pattern on contiguous copies of the faces (what a backend
    without derived datatypes must do — numba-mpi, pickled objects).
``nonblocking``
    ``Irecv``/``Isend`` on subarray datatypes; :meth:`start` posts them and returns, so
    the caller can update the inner core while messages fly, then :meth:`finish` waits
    (thesis Figs. 6.6–6.7).
``backend:<name>``
    The ``packed`` pattern written with one backend of :mod:`mpiworkbench.backends`
    (every implemented name of the backends registry: ``c``, ``mpi4py-obj``, ``mpi4py-buf``, ``numba-mpi``,
    and ``mpi4jax`` where it is installed): the same exchange
    in every module, so the thesis's module comparison (Figs. 6.2–6.5) can be rerun.
``none``
    No exchange at all: the internal ghosts keep stale values. Wrong on purpose, to show
    in a notebook what a missed exchange looks like.

Faces exclude the other axes' ghosts: a 7-point (2n+1-point) stencil needs no edges or
corners.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mpiworkbench.backends import BackendUnavailableError, NotSupportedError, get_backend, implemented_names
from mpiworkbench.backends.numba_mpi import NAME as NUMBA_MPI, world_in_place_of
from mpiworkbench.core import mpi
#: Backends of :mod:`mpiworkbench.backends` a halo exchange can be written with.
BACKENDS = tuple(implemented_names())
#: Exchange names this module implements, in the order a notebook lists them.
#: The correct exchanges written with mpi4py directly: they run on any communicator.
NATIVE_EXCHANGES = ("sendrecv", "nonblocking", "packed")
EXCHANGES = (*NATIVE_EXCHANGES, "none", *(f"backend:{b}" for b in BACKENDS))


def _backend_over(cart, name: str):
    """Backend *name* over *cart*; numba-mpi (COMM_WORLD only) gets the world when it is the same ranks."""
    try:
        # numba-mpi talks on the world only: safe when the grid holds the world's ranks in
        # order (reorder=False), so the ranks Shift returns mean the same processes there
        return get_backend(name, world_in_place_of(cart) if name == NUMBA_MPI else cart)
    except (BackendUnavailableError, NotSupportedError) as exc:
        raise ValueError(f"exchange 'backend:{name}' cannot run here: {exc}") from exc


def face(local_shape: Sequence[int], axis: int, index: int) -> tuple[slice | int, ...]:
    """Index of the plane *index* along *axis*, restricted to owned points on other axes."""
    return tuple(index if a == axis else slice(1, n - 1) for a, n in enumerate(local_shape))


def mirror_boundaries(u: np.ndarray, coords: Sequence[int], dims: Sequence[int]) -> None:
    """Fill the ghosts on the physical boundary with the Neumann mirror ``u[-1] = u[1]``.

    Only blocks touching the boundary along an axis do anything along that axis.
    """
    shape = u.shape
    for axis in range(u.ndim):
        if coords[axis] == 0:
            u[face(shape, axis, 0)] = u[face(shape, axis, 2)]
        if coords[axis] == dims[axis] - 1:
            u[face(shape, axis, shape[axis] - 1)] = u[face(shape, axis, shape[axis] - 3)]


class HaloExchange:
    """Exchange of the internal ghost layers of arrays of one local shape on a Cartesian communicator.

    Parameters
    ----------
    cart
        Cartesian communicator (non-periodic); ``cart.Shift`` gives the neighbours.
    local_shape
        Shape of the local array *including* the two ghost layers per axis.
    method
        One of :data:`EXCHANGES`.

    Attributes
    ----------
    neighbours : list of tuple of int
        ``(lower, upper)`` neighbour rank per axis (``MPI.PROC_NULL`` at the boundary).

    Raises
    ------
    ValueError
        For an unknown *method*, or a ``backend:<name>`` that cannot run on *cart*.

    Notes
    -----
    Building it and every exchange are collective on *cart*. Only the internal ghosts
    are written; the physical boundary's are :func:`mirror_boundaries`'s. Call
    :meth:`free` when done (the committed datatypes and the backend).
    """

    def __init__(self, cart, local_shape: Sequence[int], method: str = "sendrecv") -> None:
        self._types: list = []
        self._backend = None
        if method not in EXCHANGES:
            raise ValueError(f"exchange must be one of {', '.join(EXCHANGES)}; got {method!r}")
        MPI = mpi.MPI()
        self.cart = cart
        self.method = method
        self.local_shape = tuple(int(n) for n in local_shape)
        self.ndim = len(self.local_shape)
        #: ``(lower, upper)`` neighbour rank per axis (``MPI.PROC_NULL`` at the boundary).
        self.neighbours = [cart.Shift(axis, 1) for axis in range(self.ndim)]
        # (send_index, recv_index, peer-to-send-to, peer-to-receive-from, tag) per message:
        # towards upper: send my last owned plane up, receive my lower ghost from below.
        self._messages = []
        for axis, (lo, hi) in enumerate(self.neighbours):
            n = self.local_shape[axis]
            self._messages.append((axis, n - 2, 0, hi, lo, 2 * axis))
            self._messages.append((axis, 1, n - 1, lo, hi, 2 * axis + 1))
        self._send_types = []
        self._recv_types = []
        if method in ("sendrecv", "nonblocking"):
            for axis, send_i, recv_i, _, _, _ in self._messages:
                self._send_types.append(self._plane_type(MPI, axis, send_i))
                self._recv_types.append(self._plane_type(MPI, axis, recv_i))
        self._backend = _backend_over(cart, method.split(":", 1)[1]) if method.startswith("backend:") else None
        if method == "packed" or self._backend is not None:
            self._send_bufs = []
            self._recv_bufs = []
            for axis, *_ in self._messages:
                shape = tuple(n - 2 for a, n in enumerate(self.local_shape) if a != axis)
                self._send_bufs.append(np.empty(shape))
                self._recv_bufs.append(np.empty(shape))

    def _plane_type(self, MPI, axis: int, index: int):
        sizes = list(self.local_shape)
        subsizes = [1 if a == axis else n - 2 for a, n in enumerate(sizes)]
        starts = [index if a == axis else 1 for a in range(len(sizes))]
        dtype = MPI.DOUBLE.Create_subarray(sizes, subsizes, starts, order=MPI.ORDER_C).Commit()
        self._types.append(dtype)
        return dtype

    def _check(self, u: np.ndarray) -> None:
        if u.shape != self.local_shape or u.dtype != np.float64 or not u.flags.c_contiguous:
            raise ValueError(
                f"halo exchange expects a C-contiguous float64 array of shape {self.local_shape}; "
                f"got {u.dtype} {u.shape}"
            )

    def exchange(self, u: np.ndarray) -> None:
        """Fill the internal ghost layers of *u* from the neighbours (collective on ``cart``).

        Parameters
        ----------
        u
            C-contiguous float64 array of shape :attr:`local_shape`; its ghosts on internal
            boundaries are overwritten in place.
        """
        self.finish(self.start(u))

    def start(self, u: np.ndarray):
        """Begin the exchange of *u* (as :meth:`exchange`); returns a handle for :meth:`finish`.

        For ``nonblocking`` the messages are in flight when this returns and *u*'s owned
        boundary planes and ghosts must not be touched until :meth:`finish`; the other
        methods complete the exchange here.

        Returns
        -------
        list of MPI.Request or None
            The pending requests (``nonblocking``), else ``None``.
        """
        self._check(u)
        if self.method == "none":
            return None
        if self.method == "sendrecv":
            for (_, _, _, dest, source, tag), st, rt in zip(self._messages, self._send_types, self._recv_types):
                self.cart.Sendrecv([u, 1, st], dest, tag, [u, 1, rt], source, tag)
            return None
        if self.method == "packed":
            for i, (axis, send_i, recv_i, dest, source, tag) in enumerate(self._messages):
                sbuf, rbuf = self._send_bufs[i], self._recv_bufs[i]
                sbuf[...] = u[face(self.local_shape, axis, send_i)]
                self.cart.Sendrecv(sbuf, dest, tag, rbuf, source, tag)
                if source != mpi.MPI().PROC_NULL:
                    u[face(self.local_shape, axis, recv_i)] = rbuf
            return None
        if self._backend is not None:
            be = self._backend
            for i, (axis, send_i, recv_i, dest, source, tag) in enumerate(self._messages):
                sbuf, rbuf = self._send_bufs[i], self._recv_bufs[i]
                sbuf[...] = u[face(self.local_shape, axis, send_i)]
                be.sendrecv(sbuf, dest, out=rbuf, source=source, sendtag=tag, recvtag=tag)
                if source != be.PROC_NULL:
                    u[face(self.local_shape, axis, recv_i)] = rbuf
            return None
        # nonblocking: post every receive first, then every send
        requests = [
            self.cart.Irecv([u, 1, rt], source, tag)
            for (_, _, _, _, source, tag), rt in zip(self._messages, self._recv_types)
        ]
        requests += [
            self.cart.Isend([u, 1, st], dest, tag)
            for (_, _, _, dest, _, tag), st in zip(self._messages, self._send_types)
        ]
        return requests

    def finish(self, handle) -> None:
        """Complete an exchange begun with :meth:`start`."""
        if handle:
            mpi.MPI().Request.Waitall(handle)

    def free(self) -> None:
        """Release the committed datatypes and the backend."""
        for dtype in self._types:
            dtype.Free()
        self._types = []
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __del__(self) -> None:  # datatypes are cheap; free them when the solver goes
        try:
            if self._types and not mpi.MPI().Is_finalized():
                self.free()
        except Exception:  # noqa: BLE001 - never raise from a finaliser
            pass
