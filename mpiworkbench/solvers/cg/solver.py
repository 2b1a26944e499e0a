"""Distributed conjugate gradients for the 2-D Poisson system (thesis §6.2, Algorithm 2).

:class:`CGSolver` lives on every rank of a communicator and can be stepped
(:meth:`CGSolver.iterate`), inspected (residual history, per-rank timings) and gathered
(:meth:`CGSolver.gather_solution`). Each rank holds only its own block of rows
(:mod:`mpiworkbench.solvers.cg.poisson`: the CSR block :attr:`CGSolver.A`, applied without being
stored by :class:`~mpiworkbench.solvers.cg.poisson.LocalOperator`, bit for bit its product);
before each matrix-vector product the *local value*
vector is completed with just the entries the neighbours own along the shared edges
(thesis Fig. 6.9), and dot products are summed with an allreduce.

Three variants with the same iterates in exact arithmetic — ``"classic"`` (2 allreduces
per iteration), ``"thesis"`` (Algorithm 2 as printed, 3) and ``"fused"`` (Chronopoulos–Gear,
1) — are named in :mod:`~mpiworkbench.solvers.cg.variants` and stepped by
:mod:`~mpiworkbench.solvers.cg.recurrences`.

Stopping (``criterion``): ``"thesis"`` stops when ``ρ_k/ρ_0 ≤ tol`` with ``ρ = rᵀr`` and
starts from ``x0 = b`` (Algorithm 2); ``"relative"`` stops when ``‖r_k‖/‖b‖ ≤ tol`` and
starts from ``x0 = 0`` (as ``scipy.sparse.linalg.cg(rtol=tol, atol=0)``). Note that
``ρ_k/ρ_0 ≤ 1e-8`` is only ``‖r_k‖/‖r_0‖ ≤ 1e-4``.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Callable

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.solvers.cg import poisson, recurrences
from mpiworkbench.solvers.cg.exchange import LocalValueExchange, make_backend
from mpiworkbench.solvers.cg.report import gather_solution, solution_picture, solver_result
from mpiworkbench.solvers.cg.timing import TIMING_KEYS, TimedOperations
from mpiworkbench.solvers.cg.variants import ALLREDUCES_PER_ITERATION, default_maxiter, validate
from mpiworkbench.solvers.cg.vectors import local_dot
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture

__all__ = ["ALLREDUCES_PER_ITERATION", "TIMING_KEYS", "CGSolver", "LocalValueExchange"]


class CGSolver:
    """CG on the ``mesh × mesh`` Poisson system, distributed over *comm*; see the module doc.

    Parameters
    ----------
    mesh
        Interior points per axis (``h = 1/(mesh+1)``); ``mesh²`` unknowns.
    comm
        Communicator (``None``: ``COMM_WORLD``); the solver works on a duplicate.
    tol, criterion
        Stopping rule: ``"thesis"`` (``ρ_k/ρ_0 ≤ tol``) or ``"relative"`` (``‖r‖/‖b‖ ≤ tol``).
    partition, dims
        ``"rows"`` (thesis Fig. 6.8) or ``"blocks"`` (2-D subdomains; *dims* fixes the grid).
    rhs
        See :func:`mpiworkbench.solvers.cg.poisson.local_rhs`; default the manufactured one.
    x0
        ``"rhs"`` (Algorithm 2) or ``"zero"``; default follows the criterion.
    maxiter
        Iteration cap; reaching it is a result with a ``RuntimeWarning``, not an error.
    variant
        ``"classic"`` (2 allreduces/iteration), ``"thesis"`` (3) or ``"fused"`` (1).
    backend
        Communication backend name for the exchange and the allreduces.

    Attributes
    ----------
    x, r : numpy.ndarray
        This rank's owned entries of the iterate and of the (recursively updated) residual.
    rho, rho0 : float
        ``ρ_k = r_kᵀr_k`` now and at the start.
    rho_history : list of float
        ``ρ`` after every iteration, ``ρ_0`` first.
    iterations : int
        Iterations done.
    status : str
        ``"running"``, ``"converged"`` or ``"maxiter"``.
    timing : dict
        This rank's seconds per category of :data:`TIMING_KEYS` spent iterating.
    comm
        The solver's duplicate of *comm* (freed by :meth:`close`).

    Raises
    ------
    ValueError
        On every rank, when any rank finds the arguments invalid (see
        :func:`~mpiworkbench.solvers.cg.variants.validate`) or the backend cannot run here.

    Notes
    -----
    Construction and the methods marked collective must be called on every rank of
    *comm*. The iterates do not depend on the partition or the backend beyond rounding.
    """

    def __init__(
        self,
        mesh: int,
        *,
        comm=None,
        tol: float = 1e-8,
        criterion: str = "thesis",
        partition: str = "rows",
        dims: tuple[int, int] | None = None,
        rhs: str | Callable | np.ndarray | None = None,
        x0: str | None = None,
        maxiter: int | None = None,
        variant: str = "classic",
        backend: str = "mpi4py-buf",
    ):
        t_start = time.perf_counter()
        base = mpi.resolve_comm(comm)
        size, rank = base.Get_size(), base.Get_rank()

        def setup():
            validate(mesh, tol, criterion, partition, variant, maxiter, x0)
            grid = poisson.partition_dims(partition, size, dims)
            blocks = poisson.make_blocks(int(mesh), grid)
            return blocks, poisson.local_rhs(blocks[rank], rhs)

        self.blocks, b = mpi.checked(base, setup)
        self.comm = base.Dup()
        self.backend = mpi.checked(self.comm, lambda: make_backend(backend, self.comm, base))
        self.mesh = int(mesh)
        self.tol = float(tol)
        self.criterion = criterion
        self.partition = partition
        self.variant = variant
        self.backend_name = backend
        self.rhs_name = rhs if isinstance(rhs, str) or rhs is None else "custom"
        self.manufactured = rhs is None or (isinstance(rhs, str) and rhs == "manufactured")
        self.maxiter = default_maxiter(self.mesh) if maxiter is None else int(maxiter)
        self.x0 = x0 or ("rhs" if criterion == "thesis" else "zero")
        self.block = self.blocks[rank]
        self.dims = self.block.dims
        self._matrix = None
        self._ops = TimedOperations(poisson.LocalOperator(self.block), LocalValueExchange(self.block, self.backend),
                                    self.backend)
        self.timing = self._ops.timing  # the same dict, for the whole solver's life
        n, total = self.block.n_owned, self.block.n_owned + self.block.n_ghost
        self.b = b
        self.iterate_s = 0.0
        self.iterations = 0
        self.status = "running"

        # x lives in a local value vector so the true residual can be formed.
        self._xl = np.zeros(total)
        self.x = self._xl[:n]
        if self.x0 == "rhs":
            self.x[:] = b
        self.bb = self._ops.allreduce(local_dot(b, b))
        self._cg = recurrences.start(variant, self._ops, self.x, b - self._ops.matvec(self._xl, self.x), total)
        self.rho0 = self.rho
        self.rho_history = [self.rho]
        self._ops.reset()  # set-up is not iteration time
        self._check_convergence()
        self.setup_s = time.perf_counter() - t_start

    # -- the iteration ---------------------------------------------------------------
    def _check_convergence(self) -> bool:
        if self.criterion == "thesis":
            done = self.rho <= self.tol * self.rho0
        else:
            done = self.rho <= (self.tol**2) * self.bb
        if done or self.rho == 0.0:
            self.status = "converged"
            return True
        return False

    @property
    def A(self):
        """This rank's rows of the matrix as a SciPy CSR block (:func:`~mpiworkbench.solvers.cg.poisson.local_matrix`),
        built when asked for: the iterations apply the same rows without storing them
        (:class:`~mpiworkbench.solvers.cg.poisson.LocalOperator`, bit for bit the CSR product)."""
        if self._matrix is None:
            self._matrix = poisson.local_matrix(self.block)
        return self._matrix

    @property
    def rho(self) -> float:
        """``ρ_k = r_kᵀr_k`` of the current iterate (summed over the ranks)."""
        return self._cg.rho

    @property
    def r(self) -> np.ndarray:
        """This rank's owned entries of the recursively updated residual."""
        return self._cg.r

    def iterate(self, k: int | None = None) -> dict[str, Any]:
        """Run up to *k* iterations (``None``: until converged or ``maxiter``). Collective.

        Stops early at convergence. Reaching ``maxiter`` warns (``RuntimeWarning``) on
        every rank and sets ``status = "maxiter"``.

        Parameters
        ----------
        k
            A non-negative number of iterations, or ``None``.

        Returns
        -------
        dict
            :meth:`state`: ``iterations``, ``status``, ``converged``, ``residual``, ``rho_ratio``.
        """
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0):
            raise ValueError(f"k must be a non-negative number of iterations or None; got {k!r}")
        t0 = time.perf_counter()
        step = self._cg.step
        done = 0
        while self.status == "running" and (k is None or done < k):
            if self.iterations >= self.maxiter:
                self.status = "maxiter"
                warnings.warn(
                    f"CG reached maxiter={self.maxiter} at mesh={self.mesh} before the "
                    f"{self.criterion} criterion tol={self.tol:g} (now {self._measure():.3e}); "
                    "the result is the last iterate — raise maxiter or loosen tol",
                    RuntimeWarning,
                    stacklevel=2,
                )
                break
            step()
            self.iterations += 1
            done += 1
            self.rho_history.append(self.rho)
            self._check_convergence()
        self.iterate_s += time.perf_counter() - t0
        return self.state()

    def advance(self, k: int | None, start: int = 0) -> dict[str, Any]:
        """:meth:`iterate` *k* times, then :meth:`state` plus the :meth:`history` from
        *start* — one round trip for a remote client following the run. Collective."""
        state = self.iterate(k)
        return {**state, "history": self.history(start)}

    def solve(self) -> dict[str, Any]:
        """Iterate to convergence (or ``maxiter``); returns :meth:`result`. Collective."""
        self.iterate(None)
        return self.result()

    def _measure(self) -> float:
        return self.rho / self.rho0 if self.criterion == "thesis" else self.relative_residual()

    # -- inspection --------------------------------------------------------------------
    def relative_residual(self) -> float:
        """``‖r_k‖/‖b‖`` of the recursively updated residual."""
        return math.sqrt(self.rho / self.bb) if self.bb > 0 else math.sqrt(self.rho)

    def rho_ratio(self) -> float:
        """``ρ_k/ρ_0`` (Algorithm 2's stopping quantity)."""
        return self.rho / self.rho0 if self.rho0 > 0 else 0.0

    def state(self) -> dict[str, Any]:
        """Small, rank-independent progress summary (no communication)."""
        return {
            "iterations": self.iterations,
            "status": self.status,
            "converged": self.status == "converged",
            "residual": self.relative_residual(),
            "rho_ratio": self.rho_ratio(),
        }

    def history(self, start: int = 0) -> dict[str, list[float]]:
        """Residual history from iteration *start*: ``‖r_k‖/‖b‖`` and ``ρ_k/ρ_0``."""
        rho = np.asarray(self.rho_history[start:])
        scale = self.bb if self.bb > 0 else 1.0
        return {
            "residual": np.sqrt(rho / scale).tolist(),
            "rho_ratio": (rho / self.rho0 if self.rho0 > 0 else 0 * rho).tolist(),
        }

    def timings(self) -> dict[str, float]:
        """This rank's cumulative seconds per category, plus ``total`` spent in :meth:`iterate`.

        ``vector`` holds the local dot products and the axpy updates.
        """
        return {**self.timing, "total": self.iterate_s, "iterations": self.iterations}

    def gather_timings(self) -> list[dict[str, float]] | None:
        """Every rank's :meth:`timings` on rank 0 (``None`` elsewhere). Collective."""
        return self.comm.gather(self.timings(), root=0)

    def layout(self) -> list[tuple[int, int, int, int]]:
        """``(i0, i1, j0, j1)`` of every rank's block, in rank order (for drawing)."""
        return [(b.i0, b.i1, b.j0, b.j1) for b in self.blocks]

    def true_residual(self) -> float:
        """``‖b − A x‖/‖b‖`` recomputed from ``x`` (one exchange and matvec). Collective."""
        with self._ops.untimed():
            r = self.b - self._ops.matvec(self._xl, self.x)
            rr = self._ops.allreduce(local_dot(r, r))
        return math.sqrt(rr / self.bb) if self.bb > 0 else math.sqrt(rr)

    def max_error(self) -> float | None:
        """``max |x − x(1−x)y(1−y)|`` over the nodes (manufactured right-hand side only,
        else ``None``). Collective."""
        if not self.manufactured:
            return None
        xs, ys = poisson.node_coordinates(self.block)
        local = float(np.max(np.abs(self.x - poisson.manufactured_solution(xs, ys).ravel())))
        return float(self.backend.allreduce(np.array([local]), "max")[0])

    def gather_solution(self) -> np.ndarray | None:
        """The ``mesh × mesh`` solution on rank 0 (``None`` elsewhere). Collective."""
        return gather_solution(self)

    def solution_picture(self, resolution: int | None = DEFAULT_RESOLUTION) -> Picture | None:
        """The solution as a screen shows it (block means at most *resolution* per side, the
        exact minimum and maximum) on rank 0, ``None`` elsewhere; each rank reduces its own
        block before the gather. At or below *resolution* the values are
        :meth:`gather_solution`'s. Collective."""
        return solution_picture(self, resolution)

    def result(self) -> dict[str, Any]:
        """Everything a report needs (same on every rank; timing split from all ranks). Collective.

        Returns
        -------
        dict
            The keys of ``mpiworkbench cg --json``; see :func:`~mpiworkbench.solvers.cg.report.solver_result`.
        """
        return solver_result(self)

    def close(self) -> None:
        """Free the solver's duplicate communicator."""
        comm, self.comm = getattr(self, "comm", None), None
        if comm is not None:
            try:
                comm.Free()
            except Exception:  # noqa: BLE001 - finalised MPI: nothing left to free
                pass
