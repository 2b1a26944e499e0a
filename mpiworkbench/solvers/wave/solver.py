"""The distributed 3-D wave solver of thesis §6.1, a stateful object living on the ranks.

The problem (mesh, stability limit, exact solution) is in
:mod:`~mpiworkbench.solvers.wave.problem`, the update kernels in
:mod:`~mpiworkbench.solvers.wave.kernels`, the halo exchanges in
:mod:`mpiworkbench.solvers.halo`. Leapfrog scheme (6.5), special first step (6.6), mirror
ghosts for the Neumann condition, Algorithm 1:

    while steps remain:
        mirror the physical-boundary ghosts            (compute)
        exchange the internal ghosts with neighbours   (exchange)
        update the owned points                        (compute)

Used the same way from ``mpiexec`` (the CLI), ipyparallel engines
(``wb.create("mpiworkbench.solvers.wave.solver:WaveSolver", ...)``) or a batch job.

>>> s = WaveSolver(33, kernel="numpy")        # doctest: +SKIP
>>> s.step(20); s.error()                      # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.solvers import halo
from mpiworkbench.solvers.decomposition import create_cart, gather_blocks
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution, gather_picture
from mpiworkbench.solvers.wave import kernels
from mpiworkbench.solvers.wave.problem import WHOLE_STEP, check_plane, check_steps, local_energy, validate
from mpiworkbench.solvers.wave.whole_step import stepper_on

__all__ = ["WaveSolver"]

#: Bytes of one slab of :func:`max_abs_difference`'s pass: well within a core's L2 cache.
ERROR_SLAB_BYTES = 256 * 1024


def error_slab_shape(shape: Sequence[int], slab_bytes: int = ERROR_SLAB_BYTES) -> tuple[int, ...]:
    """The scratch :func:`max_abs_difference` goes through a block of *shape* with: whole
    planes along the first axis, as many as fit in *slab_bytes* (at least one row)."""
    shape = tuple(int(n) for n in shape)
    per_row = math.prod(shape[2:]) * 8
    rows = max(1, slab_bytes // max(per_row, 1))
    if rows < shape[1]:
        return (1, rows, *shape[2:])
    return (max(1, min(shape[0], rows // shape[1])), *shape[1:])


def max_abs_difference(u: np.ndarray, phi: np.ndarray, factor: float, scratch: np.ndarray) -> float:
    """``float(np.max(np.abs(u − phi·factor)))`` bit for bit, without block-sized temporaries.

    The same three operations per element (multiply, subtract, absolute value) go through
    *u* slab by slab in *scratch* (shaped by :func:`error_slab_shape`), then the maximum of
    the slabs' maxima (a maximum is exact, and a NaN anywhere still gives NaN).
    """
    if u.shape != phi.shape:
        raise ValueError(f"u and phi must have the same shape; got {u.shape} and {phi.shape}")
    n0, n1 = u.shape[0], u.shape[1]
    k0, k1 = scratch.shape[0], scratch.shape[1]
    maxima = []
    for i in range(0, n0, k0):
        i1 = min(i + k0, n0)
        for j in range(0, n1, k1):
            j1 = min(j + k1, n1)
            buf = scratch[: i1 - i, : j1 - j]
            np.multiply(phi[i:i1, j:j1], factor, out=buf)
            np.subtract(u[i:i1, j:j1], buf, out=buf)
            np.abs(buf, out=buf)
            maxima.append(buf.max())
    return float(np.max(maxima))


class WaveSolver:
    """One rank's part of the distributed 3-D wave solver.

    Parameters
    ----------
    mesh
        Points per axis including the boundary: ``N`` or ``(NX, NY, NZ)`` or ``"NX,NY,NZ"``.
    comm
        Communicator of the ranks that take part (``None``: ``COMM_WORLD``). Collective.
    dims
        Blocks per axis (``None`` or zeros: ``MPI.Compute_dims``); product = ranks.
    cfl
        Fraction of the stability limit for dt (``0 < cfl <= 1``); ignored when *dt* is given.
    dt
        Explicit time step (must not exceed the stability limit).
    c
        Wave speed.
    kernel
        One of :data:`~mpiworkbench.solvers.wave.kernels.KERNELS`: ``"numpy"``, ``"numba"``
        or ``"c"`` (bit-for-bit the same results).
    exchange
        One of :data:`~mpiworkbench.solvers.wave.problem.EXCHANGES`: ``"sendrecv"``,
        ``"nonblocking"`` (overlapped with the inner update), ``"packed"``,
        ``"backend:<name>"``, ``"none"`` (wrong on purpose) or ``"numba-mpi"`` (whole step
        in JIT; kernel numba, all of ``COMM_WORLD`` only).

    Attributes
    ----------
    shape : tuple of int
        Mesh points per axis.
    layout : Decomposition
        The block decomposition; ``dims`` its blocks per axis.
    dt, cfl, c : float
        Time step, its fraction of the stability limit, wave speed.
    cart
        The Cartesian communicator (``reorder=False``: ``cart.rank == comm.rank``).
    coords, ranges
        This rank's block coordinates and global ``(start, stop)`` per axis.
    u, u_old : numpy.ndarray
        Ghosted local blocks of the current and previous time level.
    steps : int
        Time steps taken; :attr:`t` is ``steps · dt``.

    Raises
    ------
    ValueError
        On every rank, when any rank finds the arguments invalid (bad mesh, unstable
        *dt*, unknown kernel or exchange, a decomposition leaving fewer than
        :data:`~mpiworkbench.solvers.wave.problem.MIN_POINTS_PER_RANK` points per rank).

    Notes
    -----
    Construction and every method except :meth:`owned`, :meth:`timings`, :meth:`info`
    and :attr:`t` are collective over *comm*. The field is bit-for-bit the same for any
    decomposition, kernel and (correct) exchange.
    """

    def __init__(
        self,
        mesh: int | Sequence[int] | str,
        *,
        comm=None,
        dims: Sequence[int] | None = None,
        cfl: float = 1.0,
        dt: float | None = None,
        c: float = 1.0,
        kernel: str = "numpy",
        exchange: str = "sendrecv",
    ) -> None:
        base = mpi.resolve_comm(comm)
        self.shape, self.layout, self.cfl, self.dt = mpi.checked(
            base, lambda: validate(mesh, base.size, dims, cfl, dt, c, kernel, exchange)
        )
        self.c = float(c)
        self.kernel = kernel
        self.exchange_method = exchange
        self.dims = self.layout.dims
        self.cart = create_cart(base, self.layout)
        self.rank = self.cart.rank
        self.size = self.cart.size
        self.coords = tuple(self.cart.Get_coords(self.rank))
        self.ranges = self.layout.ranges(self.coords)
        owned = self.layout.local_shape(self.coords)
        self.local_shape = tuple(n + 2 for n in owned)
        self.spacing = tuple(1.0 / (n - 1) for n in self.shape)
        cx2, cy2, cz2 = ((self.c * self.dt / h) ** 2 for h in self.spacing)
        self.coeffs = (cx2, cy2, cz2, 2.0 * (1.0 - cx2 - cy2 - cz2))

        def build():
            if exchange == WHOLE_STEP:
                stepper = stepper_on(self.cart, self.local_shape, self.coeffs)
                return kernels.make_update(kernel, self.local_shape, self.coeffs), None, stepper
            update = kernels.make_update(kernel, self.local_shape, self.coeffs)
            return update, halo.HaloExchange(self.cart, self.local_shape, exchange), None

        self._update, self._halo, self._stepper = mpi.checked(self.cart, build)
        self._core, self._shell = kernels.core_and_shell(self.local_shape)
        self._interior = kernels.interior_box(self.local_shape)
        x, y, z = self._coordinates()
        self._phi = 2.0 * np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z)
        self.u_old = np.zeros(self.local_shape)
        self.u = np.zeros(self.local_shape)
        self.u_new = np.zeros(self.local_shape)
        self.u[1:-1, 1:-1, 1:-1] = self._phi
        self._error_scratch: np.ndarray | None = None  # error()'s slab, made on first use
        self.steps = 0
        self._compute_s = 0.0
        self._exchange_s = 0.0
        self._history: list[tuple[float, float]] = []

    # -- set-up helpers ------------------------------------------------------------------
    def _coordinates(self):
        axes = [np.arange(a, b) * h for (a, b), h in zip(self.ranges, self.spacing)]
        return np.meshgrid(*axes, indexing="ij", sparse=True)

    @property
    def t(self) -> float:
        """Simulated time ``steps · dt``."""
        return self.steps * self.dt

    # -- time stepping -------------------------------------------------------------------
    def step(self, k: int = 1) -> dict[str, Any]:
        """Advance *k* time steps (collective).

        Parameters
        ----------
        k
            Number of steps, a non-negative integer (``ValueError`` on every rank otherwise).

        Returns
        -------
        dict
            ``{"steps": total steps so far, "t": simulated time}``.
        """
        mpi.checked(self.cart, lambda: check_steps(k))
        k = int(k)
        if k and self._stepper is not None:
            timing = np.zeros(2)
            first = self.steps == 0
            self.u_old, self.u, self.u_new = self._stepper(self.u_old, self.u, self.u_new, k, first, timing)
            self._compute_s += float(timing[0])
            self._exchange_s += float(timing[1])
            self.steps += k
        else:
            for _ in range(k):
                self._one_step()
        return {"steps": self.steps, "t": self.t}

    def advance(self, k: int = 1) -> dict[str, Any]:
        """Step *k* times, then report ``steps``, ``t``, ``error`` and this rank's timings.

        One call per widget update: the client gets everything it redraws from one round trip.
        """
        self.step(k)
        return {"steps": self.steps, "t": self.t, "error": self.error(), **self.timings()}

    def _one_step(self) -> None:
        wtime = mpi.MPI().Wtime
        u, un, uo = self.u, self.u_new, self.u_old
        t0 = wtime()
        halo.mirror_boundaries(u, self.coords, self.dims)
        t1 = wtime()
        if self.exchange_method == "nonblocking":
            handle = self._halo.start(u)
            t2 = wtime()
            self._update(un, u, uo, self._core)
            t3 = wtime()
            self._halo.finish(handle)
            t4 = wtime()
            for box in self._shell:
                self._update(un, u, uo, box)
            exchange = (t2 - t1) + (t4 - t3)
        else:
            self._halo.exchange(u)
            t2 = wtime()
            self._update(un, u, uo, self._interior)
            exchange = t2 - t1
        if self.steps == 0:  # eq. 6.6: u^1 = u^0 + ½·(stencil) with u_t(·,0) = 0
            un[1:-1, 1:-1, 1:-1] *= 0.5
        t5 = wtime()
        self.u_old, self.u, self.u_new = u, un, uo
        self.steps += 1
        self._exchange_s += exchange
        self._compute_s += (t5 - t0) - exchange

    # -- diagnostics (collective) --------------------------------------------------------
    def owned(self) -> np.ndarray:
        """This rank's owned points of the current field (a view)."""
        return self.u[1:-1, 1:-1, 1:-1]

    def error(self) -> float:
        """``max |u − exact|`` over the whole mesh at time :attr:`t` (collective).

        The panel asks for it every frame, so the pass goes through the block in cache-sized
        slabs (:func:`max_abs_difference`) rather than with three block-sized temporaries;
        the value is bit for bit ``np.max(np.abs(owned − φ·cos(√3·π·c·t)))``.
        """
        if self._error_scratch is None:
            self._error_scratch = np.empty(error_slab_shape(self._phi.shape))
        factor = math.cos(math.sqrt(3.0) * math.pi * self.c * self.t)
        local = max_abs_difference(self.owned(), self._phi, factor, self._error_scratch)
        err = self.cart.allreduce(local, op=mpi.MPI().MAX)
        if not self._history or self._history[-1][0] != self.t:
            self._history.append((self.t, err))
        return err

    def error_history(self) -> list[tuple[float, float]]:
        """``(t, error)`` pairs recorded by each :meth:`error` call."""
        return list(self._history)

    def energy(self) -> float:
        """Discrete energy at ``t − dt/2``, conserved by the leapfrog scheme (collective).

        ``E = ½ Σ w ((uⁿ − uⁿ⁻¹)/dt)² + ½ c² Σ_axes Σ_edges w⊥ (Δuⁿ/h)(Δuⁿ⁻¹/h)``, with
        trapezoidal weights ``w`` (½ on boundary nodes) times the cell volume. Needs both
        time levels' ghosts, so it exchanges them (an extra halo exchange of two arrays).
        """
        if self.steps == 0:
            raise ValueError("energy is defined between two time levels; step at least once first")
        MPI = mpi.MPI()
        exchanger = self._halo if self._halo is not None and self._halo.method != "none" else None
        if exchanger is None:
            exchanger = halo.HaloExchange(self.cart, self.local_shape, "sendrecv")
        for arr in (self.u, self.u_old):
            exchanger.exchange(arr)
        local = local_energy(self.u, self.u_old, self.ranges, self.shape, self.spacing, self.dt, self.c)
        return self.cart.allreduce(local, op=MPI.SUM)

    def timings(self) -> dict[str, Any]:
        """This rank's accumulated wall-clock split: compute vs exchange seconds."""
        return {
            "rank": self.rank,
            "coords": self.coords,
            "steps": self.steps,
            "compute_s": self._compute_s,
            "exchange_s": self._exchange_s,
        }

    def info(self) -> dict[str, Any]:
        """What was built: mesh, dims, dt, cfl, kernel, exchange, this rank's block."""
        return {
            "mesh": self.shape,
            "np": self.size,
            "dims": self.dims,
            "dt": self.dt,
            "cfl": self.cfl,
            "c": self.c,
            "kernel": self.kernel,
            "exchange": self.exchange_method,
            "rank": self.rank,
            "ranges": self.ranges,
            "steps": self.steps,
            "t": self.t,
        }

    # -- gathering (collective; rank 0 gets the array, others None) ----------------------
    def gather(self) -> np.ndarray | None:
        """The whole current field on rank 0 (``None`` elsewhere)."""
        return gather_blocks(self.cart, self.owned(), self.layout.blocks(), self.shape)

    def _plane(self, axis_i: int, index: int):
        """This rank's part of the plane *index* along *axis_i* (empty when it owns none of it),
        the plane's pieces per rank and the plane's 2-D shape."""
        pieces = self.layout.plane_blocks(axis_i, index)
        a, b = self.ranges[axis_i]
        if a <= index < b:
            idx = [slice(None)] * 3
            idx[axis_i] = index - a
            local = self.owned()[tuple(idx)]
        else:
            local = np.empty((0, 0))
        return local, pieces, tuple(n for a_, n in enumerate(self.shape) if a_ != axis_i)

    def gather_slice(self, axis: int | str, index: int) -> np.ndarray | None:
        """The 2-D plane *index* along *axis* (0/1/2 or "x"/"y"/"z") on rank 0 (``None`` elsewhere)."""
        axis_i = mpi.checked(self.cart, lambda: check_plane(self.shape, axis, index))
        local, pieces, shape2d = self._plane(axis_i, int(index))
        return gather_blocks(self.cart, local, pieces, shape2d)

    def slice_picture(self, axis: int | str, index: int, resolution: int | None = DEFAULT_RESOLUTION) -> Picture | None:
        """The plane *index* along *axis* as a screen shows it, on rank 0 (``None`` elsewhere).

        Each rank reduces its part of the plane to block means at most *resolution* points
        per side before the gather (:mod:`mpiworkbench.solvers.picture`), so a frame moves
        about one picture whatever the mesh; the plane's exact minimum and maximum come
        with it. At or below *resolution* the values are :meth:`gather_slice`'s, bit for bit.
        """
        axis_i = mpi.checked(self.cart, lambda: (check_resolution(resolution), check_plane(self.shape, axis, index))[1])
        local, pieces, shape2d = self._plane(axis_i, int(index))
        ranges = [tuple((s.start, s.stop) for s in sl) for _, sl in pieces]
        return gather_picture(self.cart, local, ranges, shape2d, resolution)

    def close(self) -> None:
        """Free the Cartesian communicator and datatypes (collective)."""
        if self._halo is not None:
            self._halo.free()
        if self.cart is not None:
            self.cart.Free()
            self.cart = None
