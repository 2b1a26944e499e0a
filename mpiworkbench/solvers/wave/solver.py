"""The distributed 3-D wave solver of thesis §6.1, a stateful object living on the ranks.

Problem: ``u_tt = c²∇²u`` on the unit cube, ``∂u/∂n = 0``, ``u(x,0) = 2cos(πx)cos(πy)cos(πz)``,
``u_t(x,0) = 0``; exact solution ``u = 2cos(πx)cos(πy)cos(πz)cos(√3·π·c·t)``. The mesh has
``NX×NY×NZ`` points including the boundary, ``x_i = i/(NX−1)``. Leapfrog scheme (6.5),
special first step (6.6), mirror ghosts for the Neumann condition, Algorithm 1:

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
from mpiworkbench.solvers import halo as halo_mod
from mpiworkbench.solvers.wave import kernels
from mpiworkbench.solvers.decomposition import axis_name, create_cart, decompose
#: Smallest number of points a rank may own along an axis.
MIN_POINTS_PER_RANK = 3
#: Exchange names: the halo module's, plus the whole-step numba-mpi loop.
EXCHANGES = (*halo_mod.EXCHANGES, "numba-mpi")


def parse_mesh(mesh: int | Sequence[int] | str) -> tuple[int, int, int]:
    """``65`` → ``(65, 65, 65)``; ``"65,33,17"`` or ``(65, 33, 17)`` as given."""
    if isinstance(mesh, str):
        try:
            parts = [int(p) for p in mesh.split(",")]
        except ValueError:
            raise ValueError(f"mesh must be N or NX,NY,NZ (integers); got {mesh!r}") from None
    elif isinstance(mesh, (int, np.integer)) and not isinstance(mesh, bool):
        parts = [int(mesh)]
    else:
        parts = [int(p) for p in mesh]
    if len(parts) == 1:
        parts *= 3
    if len(parts) != 3:
        raise ValueError(f"mesh must be N or NX,NY,NZ; got {len(parts)} numbers {tuple(parts)}")
    for axis, n in enumerate(parts):
        if n < 3:
            raise ValueError(
                f"mesh must have at least 3 points per axis (boundary included); got {n} on axis {axis_name(axis, 3)}"
            )
    return tuple(parts)  # type: ignore[return-value]


def stable_dt(mesh: Sequence[int], c: float = 1.0) -> float:
    """The stability limit ``(1/c)(1/Δx² + 1/Δy² + 1/Δz²)^(−1/2)`` (0.004510… at 129³)."""
    return 1.0 / (c * math.sqrt(sum((n - 1) ** 2 for n in mesh)))


def exact_solution(x, y, z, t: float, c: float = 1.0):
    """``2cos(πx)cos(πy)cos(πz)cos(√3·π·c·t)`` (broadcasting)."""
    return 2.0 * np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z) * math.cos(math.sqrt(3.0) * math.pi * c * t)


def _validate(mesh, nprocs, dims, cfl, dt, c, kernel, exchange):
    shape = parse_mesh(mesh)
    if kernel not in kernels.KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(kernels.KERNELS)}; got {kernel!r}")
    if exchange not in EXCHANGES:
        raise ValueError(f"exchange must be one of {', '.join(EXCHANGES)}; got {exchange!r}")
    if exchange == "numba-mpi" and kernel != "numba":
        raise ValueError(f"exchange 'numba-mpi' runs the whole step in numba; use kernel='numba' (got {kernel!r})")
    if not (isinstance(c, (int, float)) and c > 0 and math.isfinite(c)):
        raise ValueError(f"wave speed c must be a positive number; got {c!r}")
    limit = stable_dt(shape, c)
    if dt is None:
        if not (isinstance(cfl, (int, float)) and 0 < cfl <= 1):
            raise ValueError(
                f"cfl is the fraction of the stability limit and must be in (0, 1]; got {cfl!r}"
            )
        dt = cfl * limit
    else:
        if not (isinstance(dt, (int, float)) and dt > 0):
            raise ValueError(f"dt must be a positive number; got {dt!r}")
        if dt > limit:
            raise ValueError(
                f"dt {dt!r} is above the stability limit {limit:.6g} for mesh {'x'.join(map(str, shape))} "
                f"with c={c}; use dt <= {limit:.6g} or give cfl instead"
            )
        cfl = dt / limit
    layout = decompose(shape, nprocs, dims, min_points=MIN_POINTS_PER_RANK)
    return shape, layout, float(cfl), float(dt)


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
        ``"numpy"``, ``"numba"`` or ``"c"`` (bit-for-bit the same results).
    exchange
        ``"sendrecv"``, ``"nonblocking"`` (overlapped with the inner update), ``"packed"``,
        ``"none"`` (wrong on purpose) or ``"numba-mpi"`` (whole step in JIT; kernel numba).
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
        MPI = mpi.MPI()
        base = mpi.resolve_comm(comm)
        self.shape, self.layout, self.cfl, self.dt = mpi.checked(
            base, lambda: _validate(mesh, base.size, dims, cfl, dt, c, kernel, exchange)
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
            if exchange == "numba-mpi" and MPI.Group.Compare(self.cart.group, MPI.COMM_WORLD.group) != MPI.IDENT:
                raise ValueError(
                    "exchange 'numba-mpi' only works on all of MPI.COMM_WORLD in rank order (numba-mpi "
                    "has no communicator argument); use another exchange on a sub-communicator"
                )
            update = kernels.make_update(kernel, self.local_shape, self.coeffs)
            halo = None
            stepper = None
            if exchange == "numba-mpi":
                neighbours = [self.cart.Shift(a, 1) for a in range(3)]
                boundary = [(self.coords[a] == 0, self.coords[a] == self.dims[a] - 1) for a in range(3)]
                stepper = kernels.NumbaMpiStepper(self.local_shape, self.coeffs, neighbours, boundary, MPI.PROC_NULL)
            else:
                halo = halo_mod.HaloExchange(self.cart, self.local_shape, exchange)
            return update, halo, stepper

        self._update, self._halo, self._stepper = mpi.checked(self.cart, build)
        self._core, self._shell = kernels.core_and_shell(self.local_shape)
        self._interior = kernels.interior_box(self.local_shape)
        x, y, z = self._coordinates()
        self._phi = 2.0 * np.cos(np.pi * x) * np.cos(np.pi * y) * np.cos(np.pi * z)
        self.u_old = np.zeros(self.local_shape)
        self.u = np.zeros(self.local_shape)
        self.u_new = np.zeros(self.local_shape)
        self.u[1:-1, 1:-1, 1:-1] = self._phi
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
        """Advance *k* time steps (collective). Returns ``{"steps", "t"}``."""
        mpi.checked(self.cart, lambda: self._check_steps(k))
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

    @staticmethod
    def _check_steps(k) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ValueError(f"steps must be a non-negative integer; got {k!r}")
        if k < 0:
            raise ValueError(f"steps must be a non-negative integer; got {k}")

    def _one_step(self) -> None:
        wtime = mpi.MPI().Wtime
        u, un, uo = self.u, self.u_new, self.u_old
        t0 = wtime()
        halo_mod.mirror_boundaries(u, self.coords, self.dims)
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
        """``max |u − exact|`` over the whole mesh at time :attr:`t` (collective)."""
        local = float(np.max(np.abs(self.owned() - self._phi * math.cos(math.sqrt(3.0) * math.pi * self.c * self.t))))
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
            exchanger = halo_mod.HaloExchange(self.cart, self.local_shape, "sendrecv")
        for arr in (self.u, self.u_old):
            exchanger.exchange(arr)
        weights = []
        for (a, b), n in zip(self.ranges, self.shape):
            w = np.ones(b - a)
            if a == 0:
                w[0] = 0.5
            if b == n:
                w[-1] = 0.5
            weights.append(w)
        wx, wy, wz = np.meshgrid(*weights, indexing="ij", sparse=True)
        u, uo = self.owned(), self.u_old[1:-1, 1:-1, 1:-1]
        kinetic = 0.5 * np.sum(wx * wy * wz * ((u - uo) / self.dt) ** 2)
        potential = 0.0
        for axis, h in enumerate(self.spacing):
            # edges (i, i+1) owned by the lower node; the last rank along the axis owns one fewer
            stop = self.local_shape[axis] - (2 if self.ranges[axis][1] == self.shape[axis] else 1)
            lower = [slice(1, -1)] * 3
            upper = [slice(1, -1)] * 3
            lower[axis] = slice(1, stop)
            upper[axis] = slice(2, stop + 1)
            du = (self.u[tuple(upper)] - self.u[tuple(lower)]) / h
            duo = (self.u_old[tuple(upper)] - self.u_old[tuple(lower)]) / h
            w = [wx, wy, wz]
            w[axis] = 1.0
            potential += 0.5 * self.c**2 * np.sum(w[0] * w[1] * w[2] * du * duo)
        volume = math.prod(self.spacing)
        return self.cart.allreduce(float((kinetic + potential) * volume), op=MPI.SUM)

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
    def _gatherv(self, local: np.ndarray, pieces: list[tuple[int, tuple[slice, ...]]], out_shape, select):
        """Gather each rank's *local* block into *out_shape* on rank 0 (one ``Gatherv``)."""
        MPI = mpi.MPI()
        sendbuf = np.ascontiguousarray(local)
        if self.rank != 0:
            self.cart.Gatherv(sendbuf, None, root=0)
            return None
        counts = [int(np.prod([s.stop - s.start for s in sl])) for _, sl in pieces]
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(int).tolist()
        recv = np.empty(sum(counts))
        self.cart.Gatherv(sendbuf, [recv, counts, displs, MPI.DOUBLE], root=0)
        out = np.empty(out_shape)
        for (_, sl), start, count in zip(pieces, displs, counts):
            shape = tuple(s.stop - s.start for s in sl)
            out[select(sl)] = recv[start : start + count].reshape(shape)
        return out

    def gather(self) -> np.ndarray | None:
        """The whole current field on rank 0 (``None`` elsewhere)."""
        return self._gatherv(self.owned(), self.layout.blocks(), self.shape, lambda sl: sl)

    def gather_slice(self, axis: int | str, index: int) -> np.ndarray | None:
        """The 2-D plane *index* along *axis* (0/1/2 or "x"/"y"/"z") on rank 0 (``None`` elsewhere)."""
        axis_i = mpi.checked(self.cart, lambda: self._check_slice(axis, index))
        index = int(index)
        pieces = []
        for rank, sl in self.layout.blocks():
            s = sl[axis_i]
            if s.start <= index < s.stop:
                pieces.append((rank, tuple(x for a, x in enumerate(sl) if a != axis_i)))
            else:
                pieces.append((rank, tuple(slice(0, 0) for a in range(3) if a != axis_i)))
        a, b = self.ranges[axis_i]
        if a <= index < b:
            idx = [slice(None)] * 3
            idx[axis_i] = index - a
            local = self.owned()[tuple(idx)]
        else:
            local = np.empty((0, 0))
        shape2d = tuple(n for a_, n in enumerate(self.shape) if a_ != axis_i)
        return self._gatherv(local, pieces, shape2d, lambda sl: sl)

    def _check_slice(self, axis, index) -> int:
        names = {"x": 0, "y": 1, "z": 2}
        axis_i = names.get(axis, axis) if isinstance(axis, str) else axis
        if axis_i not in (0, 1, 2):
            raise ValueError(f"axis must be 0, 1, 2 or 'x', 'y', 'z'; got {axis!r}")
        n = self.shape[axis_i]
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < n:
            raise ValueError(f"slice index along {axis_name(axis_i, 3)} must be an integer in 0..{n - 1}; got {index!r}")
        return axis_i

    def close(self) -> None:
        """Free the Cartesian communicator and datatypes (collective)."""
        if self._halo is not None:
            self._halo.free()
        if self.cart is not None:
            self.cart.Free()
            self.cart = None
