"""Distributed conjugate gradients for the 2-D Poisson system (thesis §6.2, Algorithm 2).

:class:`CGSolver` lives on every rank of a communicator and can be stepped
(:meth:`CGSolver.iterate`), inspected (residual history, per-rank timings) and gathered
(:meth:`CGSolver.gather_solution`). Each rank holds only its own CSR block of rows
(:mod:`mpiworkbench.solvers.cg.poisson`); before each matrix-vector product the *local value*
vector is completed with just the entries the neighbours own along the shared edges
(thesis Fig. 6.9), and dot products are summed with an allreduce.

Three variants, same iterates in exact arithmetic:

``"thesis"``
    Algorithm 2 as printed: three allreduces per iteration (``<r,r>`` is summed twice).
``"classic"``
    Hestenes–Stiefel CG, reusing ``ρ_k``: two allreduces per iteration (the default).
``"fused"``
    Chronopoulos–Gear: one allreduce of two numbers per iteration, one more vector update.

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
from numba import njit

from mpiworkbench.backends import implemented_names
from mpiworkbench.core import mpi
from mpiworkbench.solvers.cg import poisson
CRITERIA = ("thesis", "relative")
PARTITIONS = ("rows", "blocks")
VARIANTS = ("classic", "thesis", "fused")
#: Allreduce calls per iteration of each variant.
ALLREDUCES_PER_ITERATION = {"thesis": 3, "classic": 2, "fused": 1}
TIMING_KEYS = ("matvec", "exchange", "allreduce", "vector")
#: Communication backends the solver runs on (mpiworkbench.backends names).
BACKENDS = tuple(implemented_names())


# -- local vector kernels ---------------------------------------------------------------
# Single-threaded and fused (one pass over memory where the algorithm allows). Multi-threaded
# BLAS (OpenBLAS daxpy/ddot) was tried first: on a loaded 2-core machine its threads wait
# for each other and one daxpy took milliseconds. "reassoc" lets the reductions vectorise;
# the result is the same from run to run for a given vector length.
_REASSOC = {"reassoc"}


@njit(cache=True, fastmath=_REASSOC)
def local_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``aᵀb`` of this rank's parts (the allreduce sums them)."""
    s = 0.0
    for i in range(a.size):
        s += a[i] * b[i]
    return s


@njit(cache=True, fastmath=_REASSOC)
def update_x_r(x: np.ndarray, r: np.ndarray, p: np.ndarray, v: np.ndarray, alpha: float) -> float:
    """``x += α p``, ``r −= α v``; returns the local ``rᵀr`` of the new ``r``."""
    s = 0.0
    for i in range(x.size):
        x[i] += alpha * p[i]
        ri = r[i] - alpha * v[i]
        r[i] = ri
        s += ri * ri
    return s


@njit(cache=True)
def update_p(p: np.ndarray, r: np.ndarray, beta: float) -> None:
    """``p = r + β p`` in place."""
    for i in range(p.size):
        p[i] = r[i] + beta * p[i]


@njit(cache=True)
def update_fused(p, s, x, r, w, alpha: float, beta: float) -> None:
    """Chronopoulos–Gear: ``p = r + βp``, ``s = w + βs``, ``x += αp``, ``r −= αs`` in one pass."""
    for i in range(p.size):
        pi = r[i] + beta * p[i]
        si = w[i] + beta * s[i]
        p[i] = pi
        s[i] = si
        x[i] += alpha * pi
        r[i] -= alpha * si


@njit(cache=True, fastmath=_REASSOC)
def local_dot2(r: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """``(rᵀr, wᵀr)`` in one pass (the fused variant's single allreduce sums both)."""
    rr = 0.0
    wr = 0.0
    for i in range(r.size):
        rr += r[i] * r[i]
        wr += w[i] * r[i]
    return rr, wr


def default_maxiter(mesh: int) -> int:
    """Iteration cap when none is given: ``10·mesh + 100``.

    Unpreconditioned CG on this matrix needs about ``1.7·mesh`` iterations for
    ``‖r‖/‖b‖ ≤ 1e-8`` (√κ grows like ``mesh``), so the cap only stops runaways.
    """
    return 10 * mesh + 100


def _validate(mesh, tol, criterion, partition, variant, maxiter, x0) -> None:
    if isinstance(mesh, bool) or not isinstance(mesh, (int, np.integer)) or mesh < 1:
        raise ValueError(f"mesh must be an integer of at least 1 interior point per axis; got {mesh!r}")
    if not isinstance(tol, (int, float, np.floating)) or not math.isfinite(tol) or tol <= 0:
        raise ValueError(f"tol must be a positive finite number such as 1e-8; got {tol!r}")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}; got {criterion!r}")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}; got {partition!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    if maxiter is not None and (isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 0):
        raise ValueError(f"maxiter must be a non-negative integer or None; got {maxiter!r}")
    if x0 not in (None, "rhs", "zero"):
        raise ValueError(f"x0 must be 'rhs' (Algorithm 2), 'zero' or None (the criterion's default); got {x0!r}")


def make_backend(name: str, comm, world_comm=None):
    """The :mod:`mpiworkbench.backends` backend the exchange and the allreduces go through.

    numba-mpi only knows ``COMM_WORLD``, so it is built on *world_comm* (the communicator
    the solver was given, which must then be ``COMM_WORLD``) instead of the solver's duplicate.
    """
    from mpiworkbench.backends import backend_names, get_backend
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {name!r} (registry: {backend_names()})")
    return get_backend(name, world_comm if name == "numba-mpi" else comm)


class LocalValueExchange:
    """Fill the ghost strips of a local value vector from the neighbours (thesis ``local_value``).

    Per axis, two ``sendrecv`` calls: send the south edge south while receiving the north
    ghost from the north, then the reverse (``PROC_NULL`` at physical boundaries). Rows
    are contiguous and sent in place; columns are packed into a contiguous buffer first.
    """

    def __init__(self, block: poisson.Block, backend):
        self.backend = backend
        null = backend.PROC_NULL
        ghosts = block.ghost_slices()
        edges = block.boundary_slices()
        mi, mj = block.shape
        self._steps = []
        for send_to, recv_from, tag in (("south", "north", 0), ("north", "south", 1), ("west", "east", 2), ("east", "west", 3)):
            dest, source = getattr(block, send_to), getattr(block, recv_from)
            if dest is None and source is None:
                continue
            strided = send_to in ("west", "east")
            pack = np.empty(mi if strided else mj) if strided else None
            self._steps.append(
                (edges[send_to], pack, null if dest is None else dest, ghosts[recv_from], null if source is None else source, tag)
            )
        self.messages = sum(1 for s in self._steps if s[2] != null)

    def __call__(self, local_value: np.ndarray, owned: np.ndarray) -> None:
        sendrecv = self.backend.sendrecv
        for edge, pack, dest, ghost, source, tag in self._steps:
            data = owned[edge]
            if pack is not None:
                np.copyto(pack, data)
                data = pack
            sendrecv(data, dest, out=local_value[ghost], source=source, sendtag=tag, recvtag=tag)


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
            _validate(mesh, tol, criterion, partition, variant, maxiter, x0)
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
        self.A = poisson.local_matrix(self.block)
        self._exchange = LocalValueExchange(self.block, self.backend)
        n, total = self.block.n_owned, self.block.n_owned + self.block.n_ghost
        self.b = b
        self._sum_buf = np.zeros(2)
        self._sum_out = np.zeros(2)
        self.timing = dict.fromkeys(TIMING_KEYS, 0.0)
        self.iterate_s = 0.0
        self.iterations = 0
        self.status = "running"

        # x lives in a local value vector so the true residual can be formed.
        self._xl = np.zeros(total)
        self.x = self._xl[:n]
        if self.x0 == "rhs":
            self.x[:] = b
        self.bb = self._allreduce(local_dot(b, b))
        r = b - self._matvec(self._xl, self.x)
        if variant == "fused":
            self._rl = np.zeros(total)
            self.r = self._rl[:n]
            self.r[:] = r
            self.w = self._matvec(self._rl, self.r)
            gamma, delta = self._allreduce2(*local_dot2(self.r, self.w))
            self.rho = gamma
            self.alpha = gamma / delta if delta != 0 else 0.0
            self.beta = 0.0
            self.p = np.zeros(n)
            self.s = np.zeros(n)
        else:
            self.r = r
            self._pl = np.zeros(total)
            self.p = self._pl[:n]
            self.p[:] = r
            self.rho = self._allreduce(local_dot(r, r))
        self.rho0 = self.rho
        self.rho_history = [self.rho]
        self.timing = dict.fromkeys(TIMING_KEYS, 0.0)
        self._check_convergence()
        self.setup_s = time.perf_counter() - t_start

    # -- communication, timed ----------------------------------------------------------
    def _matvec(self, local_value: np.ndarray, owned: np.ndarray) -> np.ndarray:
        t0 = time.perf_counter()
        self._exchange(local_value, owned)
        t1 = time.perf_counter()
        y = self.A @ local_value
        t2 = time.perf_counter()
        self.timing["exchange"] += t1 - t0
        self.timing["matvec"] += t2 - t1
        return y

    def _allreduce(self, value: float) -> float:
        return self._allreduce2(value, 0.0)[0]

    def _allreduce2(self, a: float, b: float) -> tuple[float, float]:
        t0 = time.perf_counter()
        buf, out = self._sum_buf, self._sum_out
        buf[0], buf[1] = a, b
        self.backend.allreduce(buf, "sum", out=out)
        self.timing["allreduce"] += time.perf_counter() - t0
        return float(out[0]), float(out[1])

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

    def _step_classic(self) -> None:
        v = self._matvec(self._pl, self.p)
        t0 = time.perf_counter()
        if self.variant == "thesis":
            # Algorithm 2 lines 13-16: <r,r> summed again although it is rho_k
            a1s = local_dot(self.r, self.r)
            t1 = time.perf_counter()
            a1 = self._allreduce(a1s)
            t2 = time.perf_counter()
            a2s = local_dot(self.p, v)
            self.timing["vector"] += (t1 - t0) + (time.perf_counter() - t2)
        else:
            a1 = self.rho
            a2s = local_dot(self.p, v)
            self.timing["vector"] += time.perf_counter() - t0
        a2 = self._allreduce(a2s)
        t0 = time.perf_counter()
        rs = update_x_r(self.x, self.r, self.p, v, a1 / a2)
        self.timing["vector"] += time.perf_counter() - t0
        rho_new = self._allreduce(rs)
        t0 = time.perf_counter()
        update_p(self.p, self.r, rho_new / self.rho)
        self.rho = rho_new
        self.timing["vector"] += time.perf_counter() - t0

    def _step_fused(self) -> None:
        t0 = time.perf_counter()
        alpha = self.alpha
        update_fused(self.p, self.s, self.x, self.r, self.w, alpha, self.beta)
        self.timing["vector"] += time.perf_counter() - t0
        self.w = self._matvec(self._rl, self.r)
        t0 = time.perf_counter()
        gs, ds = local_dot2(self.r, self.w)
        self.timing["vector"] += time.perf_counter() - t0
        gamma, delta = self._allreduce2(gs, ds)
        self.beta = gamma / self.rho
        self.alpha = gamma / (delta - self.beta * gamma / alpha)
        self.rho = gamma

    def iterate(self, k: int | None = None) -> dict[str, Any]:
        """Run up to *k* iterations (``None``: until converged or ``maxiter``).

        Stops early at convergence. Reaching ``maxiter`` warns (``RuntimeWarning``) on
        every rank and sets ``status = "maxiter"``. Returns :meth:`state`. Collective.
        """
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0):
            raise ValueError(f"k must be a non-negative number of iterations or None; got {k!r}")
        t0 = time.perf_counter()
        step = self._step_fused if self.variant == "fused" else self._step_classic
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
        saved = dict(self.timing)
        r = self.b - self._matvec(self._xl, self.x)
        self.timing = saved
        rr = self._allreduce(local_dot(r, r))
        self.timing = saved
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
        # Plain mpi4py Gatherv: gathering for display is not part of the measured
        # iteration, and not every backend has uneven-count gathers.
        counts = [b.n_owned for b in self.blocks]
        root = self.comm.Get_rank() == 0
        flat = np.empty(sum(counts)) if root else None
        self.comm.Gatherv(np.ascontiguousarray(self.x), [flat, counts] if root else None, root=0)
        if not root:
            return None
        u = np.empty((self.mesh, self.mesh))
        offset = 0
        for blk, count in zip(self.blocks, counts):
            u[blk.i0 : blk.i1, blk.j0 : blk.j1] = flat[offset : offset + count].reshape(blk.shape)
            offset += count
        return u

    def result(self) -> dict[str, Any]:
        """Everything a report needs (same on every rank; timing split from all ranks). Collective."""
        per_rank = self.comm.allgather(self.timings())
        time_s = max(t["total"] for t in per_rank)
        return {
            "mesh": self.mesh,
            "unknowns": self.mesh * self.mesh,
            "np": self.comm.Get_size(),
            "partition": self.partition,
            "dims": list(self.dims),
            "variant": self.variant,
            "allreduces_per_iteration": ALLREDUCES_PER_ITERATION[self.variant],
            "backend": self.backend_name,
            "criterion": self.criterion,
            "tol": self.tol,
            "x0": self.x0,
            "rhs": self.rhs_name,
            "maxiter": self.maxiter,
            "status": self.status,
            "converged": self.status == "converged",
            "iterations": self.iterations,
            "residual": self.relative_residual(),
            "rho_ratio": self.rho_ratio(),
            "true_residual": self.true_residual(),
            "max_error": self.max_error(),
            "time_s": time_s,
            "time_per_iteration_s": time_s / self.iterations if self.iterations else None,
            "setup_s": self.setup_s,
            "timing_split_s": {key: max(t[key] for t in per_rank) for key in TIMING_KEYS},
            "timings_per_rank": per_rank,
        }

    def close(self) -> None:
        """Free the solver's duplicate communicator."""
        comm, self.comm = getattr(self, "comm", None), None
        if comm is not None:
            try:
                comm.Free()
            except Exception:  # noqa: BLE001 - finalised MPI: nothing left to free
                pass
