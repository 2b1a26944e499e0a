"""2-D heat diffusion on a cylinder with halo rows (report 003), a stateful object on the ranks.

The ``M × N`` grid is a cylinder: the first row is held at ``top``, the last at
``bottom`` (Dirichlet), and the columns wrap around (the report's "continuous boundary
condition"). Each step is the explicit update

    u_new = u + alpha * (u_up + u_down + u_left + u_right - 4 u),   0 < alpha <= 1/4,

and the run stops when the largest change of a step, summed over the ranks with
``Allreduce(MAX)``, drops below ``tol``. The steady state is linear between the two
boundary rows. Ranks own contiguous blocks of rows (uneven when ``size`` does not divide
``M``) with one ghost row above and below, exchanged every step by one of:

``"sendrecv"``            two blocking ``Sendrecv`` (``PROC_NULL`` at the ends)
``"nonblocking"``         ``Irecv``/``Isend`` started, the rows that need no ghost updated
                          while the messages travel, ``Waitall``, then the two edge rows
``"persistent"``          ``Send_init``/``Recv_init`` made once per buffer: the solver swaps
                          ``u`` and ``u_new`` every step, so it keeps one set of requests
                          for each and starts the set bound to the current field
``"persistent-naive"``    wrong on purpose: one set of requests bound to the first buffer,
                          still started after the swap — it sends stale rows and fills
                          the ghosts of the wrong array (report 003's pointer swap)

With ``backend=<name>`` (a name of :mod:`mpiworkbench.backends`), the ``"sendrecv"``
exchange and the ``Allreduce(MAX)`` go through that backend instead of mpi4py directly:
the same program in every module (the speedup experiment ``heat`` crosses them).

Every exchange except the naive one gives bit-for-bit the field of a serial run.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.solvers.picture import DEFAULT_RESOLUTION, Picture, check_resolution, gather_picture

EXCHANGES = ("sendrecv", "nonblocking", "persistent", "persistent-naive")
#: The correct exchanges (what a timing may compare; the naive one is wrong on purpose).
TIMED_EXCHANGES = tuple(e for e in EXCHANGES if not e.endswith("-naive"))
#: Floating-point operations per updated point and step, as this module counts them: the
#: Laplacian (3 additions, one multiplication by 4, one subtraction), ``alpha * lap`` and
#: ``c + …`` (2), and the change ``un - c`` of the convergence test (1). Report 003's
#: FLOP/s come from its course skeleton's macro, whose count the report does not print.
FLOPS_PER_POINT = 8


def row_range(rows: int, rank: int, size: int) -> tuple[int, int]:
    """Global rows ``[start, stop)`` owned by *rank*; the first ``rows % size`` ranks get one more."""
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def steady_state(shape: tuple[int, int], top: float = 1.0, bottom: float = 0.0) -> np.ndarray:
    """The exact steady state: linear from *top* (row 0) to *bottom* (row M-1), equal along rows."""
    m, n = shape
    column = top + (bottom - top) * np.arange(m) / (m - 1)
    return np.repeat(column[:, None], n, axis=1)


def _parse_shape(shape: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        m = n = int(shape)
    else:
        try:
            m, n = (int(v) for v in shape)
        except (TypeError, ValueError):
            raise ValueError(f"shape must be N or (M, N) grid points; got {shape!r}") from None
    if m < 3 or n < 3:
        raise ValueError(f"the grid needs at least 3 x 3 points (two boundary rows and one to update); got {m} x {n}")
    return m, n


def _validate(shape, size, alpha, exchange, tol, backend=None):
    m, n = _parse_shape(shape)
    if backend is not None and exchange != "sendrecv":
        raise ValueError(f"a backend ({backend!r}) runs the 'sendrecv' exchange only; got exchange {exchange!r}")
    if m < size:
        raise ValueError(
            f"every rank needs at least one row: got M={m} rows on {size} ranks; use M >= {size} or fewer ranks"
        )
    if not 0 < alpha <= 0.25:
        raise ValueError(f"alpha must be in (0, 0.25] for a stable explicit step; got {alpha!r}")
    if exchange not in EXCHANGES:
        raise ValueError(f"exchange must be one of {', '.join(EXCHANGES)}; got {exchange!r}")
    if not tol > 0:
        raise ValueError(f"tol must be a positive number; got {tol!r}")
    return m, n


def update_rows(u: np.ndarray, un: np.ndarray, lo: int, hi: int, alpha: float) -> float:
    """Update local rows ``[lo, hi)`` of *un* from *u* (ghost rows above/below); return max |change|."""
    if hi <= lo:
        return 0.0
    c = u[lo:hi]
    lap = u[lo - 1 : hi - 1] + u[lo + 1 : hi + 1] + np.roll(c, 1, axis=1) + np.roll(c, -1, axis=1) - 4.0 * c
    un[lo:hi] = c + alpha * lap
    return float(np.max(np.abs(un[lo:hi] - c)))


class HeatSolver:
    """One rank's rows of the 2-D heat diffusion problem (see the module docstring).

    Parameters
    ----------
    shape
        Grid points ``N`` or ``(M, N)``: ``M`` rows (split over the ranks), ``N`` columns (periodic).
    comm
        Communicator (``None``: ``COMM_WORLD``); collective.
    alpha
        Diffusion number ``κΔt/h²`` (``0 < alpha <= 0.25``).
    top, bottom
        Temperatures of the first and last row.
    exchange
        One of :data:`EXCHANGES`.
    tol
        :meth:`run` stops when the largest change of a step is below *tol*.
    backend
        ``None`` (mpi4py directly) or a name of :mod:`mpiworkbench.backends`: the halo rows
        and the ``Allreduce(MAX)`` then go through that backend (exchange ``"sendrecv"``
        only; numba-mpi only on all of ``COMM_WORLD``).
    """

    def __init__(
        self,
        shape: int | Sequence[int] = 64,
        *,
        comm=None,
        alpha: float = 0.25,
        top: float = 1.0,
        bottom: float = 0.0,
        exchange: str = "sendrecv",
        tol: float = 1e-4,
        backend: str | None = None,
    ) -> None:
        MPI = mpi.MPI()
        base = mpi.resolve_comm(comm)
        self.shape = mpi.checked(base, lambda: _validate(shape, base.size, alpha, exchange, tol, backend))
        self.comm = base.Dup()
        self.backend_name = backend
        self._backend = None
        if backend is not None:
            from mpiworkbench.solvers.cg.exchange import make_backend  # lazy: only a solver given a backend needs the backends' registry (and CG's package) on its ranks

            try:
                self._backend = mpi.checked(self.comm, lambda: make_backend(backend, self.comm, base))
            except BaseException:
                self.comm.Free()
                raise
        self.rank, self.size = self.comm.rank, self.comm.size
        self.alpha, self.top, self.bottom, self.tol = float(alpha), float(top), float(bottom), float(tol)
        self.exchange_method = exchange
        m, n = self.shape
        self.start, self.stop = row_range(m, self.rank, self.size)
        self.nloc = self.stop - self.start
        self.up = self.rank - 1 if self.rank > 0 else MPI.PROC_NULL
        self.down = self.rank + 1 if self.rank < self.size - 1 else MPI.PROC_NULL
        self.u = np.zeros((self.nloc + 2, n))
        self.u_new = np.zeros_like(self.u)
        for buf in (self.u, self.u_new):  # boundary rows live in both buffers, never updated
            if self.start == 0:
                buf[1] = self.top
            if self.stop == m:
                buf[self.nloc] = self.bottom
        # local (ghosted) rows this rank updates: owned rows minus the two global boundary rows
        self.lo = 2 if self.start == 0 else 1
        self.hi = self.nloc if self.stop == m else self.nloc + 1
        self.steps = 0
        self.delta = float("inf")
        self.timing = {"compute": 0.0, "exchange": 0.0, "allreduce": 0.0}
        self._requests: dict[int, list] = {}
        if exchange.startswith("persistent"):
            buffers = [self.u] if exchange == "persistent-naive" else [self.u, self.u_new]
            for buf in buffers:
                self._requests[id(buf)] = self._make_persistent(buf)

    # -- halo exchange ---------------------------------------------------------------------
    def _make_persistent(self, buf: np.ndarray) -> list:
        c, nl = self.comm, self.nloc
        return [
            c.Recv_init(buf[0], self.up, 1),
            c.Recv_init(buf[nl + 1], self.down, 0),
            c.Send_init(buf[1], self.up, 0),
            c.Send_init(buf[nl], self.down, 1),
        ]

    def _start_exchange(self, u: np.ndarray) -> list:
        c, nl = self.comm, self.nloc
        if self.exchange_method == "persistent":
            reqs = self._requests[id(u)]
        elif self.exchange_method == "persistent-naive":
            reqs = next(iter(self._requests.values()))  # bound to the first buffer, whatever u is now
        else:
            return [c.Irecv(u[0], self.up, 1), c.Irecv(u[nl + 1], self.down, 0),
                    c.Isend(u[1], self.up, 0), c.Isend(u[nl], self.down, 1)]
        mpi.MPI().Prequest.Startall(reqs)
        return reqs

    def _exchange_blocking(self, u: np.ndarray) -> None:
        c, nl = self.comm, self.nloc
        be = self._backend
        if be is not None:
            null = mpi.MPI().PROC_NULL
            up = be.PROC_NULL if self.up == null else self.up
            down = be.PROC_NULL if self.down == null else self.down
            be.sendrecv(u[1], up, out=u[nl + 1], source=down, sendtag=0, recvtag=0)
            be.sendrecv(u[nl], down, out=u[0], source=up, sendtag=1, recvtag=1)
            return
        c.Sendrecv(u[1], self.up, 0, u[nl + 1], self.down, 0)
        c.Sendrecv(u[nl], self.down, 1, u[0], self.up, 1)

    # -- stepping --------------------------------------------------------------------------
    def _one_step(self) -> None:
        MPI = mpi.MPI()
        u, un, lo, hi, a = self.u, self.u_new, self.lo, self.hi, self.alpha
        t0 = MPI.Wtime()
        if self.exchange_method == "sendrecv":
            self._exchange_blocking(u)
            t1 = MPI.Wtime()
            local = update_rows(u, un, lo, hi, a)
            t_exchange = t1 - t0
        else:
            reqs = self._start_exchange(u)
            t1 = MPI.Wtime()
            inner_lo, inner_hi = max(lo, 2), min(hi, self.nloc)  # rows needing no ghost row
            local = update_rows(u, un, inner_lo, inner_hi, a)
            t2 = MPI.Wtime()
            MPI.Request.Waitall(reqs)
            t3 = MPI.Wtime()
            for row in sorted({lo, hi - 1}):
                if lo <= row < hi and not inner_lo <= row < inner_hi:
                    local = max(local, update_rows(u, un, row, row + 1, a))
            t_exchange = (t1 - t0) + (t3 - t2)
        t4 = MPI.Wtime()
        if self._backend is not None:
            self.delta = float(self._backend.allreduce(np.array([local]), "max")[0])
        else:
            self.delta = self.comm.allreduce(local, op=MPI.MAX)
        t5 = MPI.Wtime()
        self.u, self.u_new = un, u  # swap the buffers (the persistent requests must follow)
        self.steps += 1
        self.timing["exchange"] += t_exchange
        self.timing["compute"] += (t4 - t0) - t_exchange
        self.timing["allreduce"] += t5 - t4

    def step(self, k: int = 1) -> dict[str, Any]:
        """Advance *k* steps (collective); returns ``{"steps", "delta"}``."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"steps must be a non-negative integer; got {k!r}")
        for _ in range(int(k)):
            self._one_step()
        return {"steps": self.steps, "delta": self.delta}

    def run(self, max_steps: int = 100_000, tol: float | None = None) -> dict[str, Any]:
        """Step until the largest change is below *tol* (default: the solver's) or *max_steps*."""
        tol = self.tol if tol is None else float(tol)
        done = 0
        while done < max_steps and not self.delta < tol:
            self._one_step()
            done += 1
        return {"steps": self.steps, "delta": self.delta, "converged": self.delta < tol}

    # -- inspection (collective) -------------------------------------------------------------
    def owned(self) -> np.ndarray:
        """This rank's rows of the current field (a view)."""
        return self.u[1 : self.nloc + 1]

    def gather(self) -> np.ndarray | None:
        """The whole ``M × N`` field on rank 0 (``None`` elsewhere), one ``Gatherv``."""
        m, n = self.shape
        counts = [(row_range(m, r, self.size)[1] - row_range(m, r, self.size)[0]) * n for r in range(self.size)]
        out = np.empty((m, n)) if self.rank == 0 else None
        self.comm.Gatherv(np.ascontiguousarray(self.owned()), [out, counts] if self.rank == 0 else None, root=0)
        return out

    def picture(self, resolution: int | None = DEFAULT_RESOLUTION) -> Picture | None:
        """The field as a screen shows it (block means at most *resolution* per side, the exact
        minimum and maximum) on rank 0, ``None`` elsewhere; each rank reduces its own rows
        before the gather. At or below *resolution* the values are :meth:`gather`'s. Collective."""
        mpi.checked(self.comm, lambda: check_resolution(resolution))
        m, n = self.shape
        ranges = [(row_range(m, r, self.size), (0, n)) for r in range(self.size)]
        return gather_picture(self.comm, self.owned(), ranges, self.shape, resolution)

    def error(self) -> float:
        """Max distance from the exact steady state (collective)."""
        exact = steady_state(self.shape, self.top, self.bottom)[self.start : self.stop]
        return self.comm.allreduce(float(np.max(np.abs(self.owned() - exact))), op=mpi.MPI().MAX)

    def timings(self) -> dict[str, float]:
        """Seconds spent per phase on this rank."""
        return dict(self.timing)

    def updated_points(self) -> int:
        """Grid points updated per step, over all ranks (the two boundary rows are not)."""
        m, n = self.shape
        return (m - 2) * n

    def info(self) -> dict[str, Any]:
        return {"shape": self.shape, "ranks": self.size, "rows": (self.start, self.stop), "exchange": self.exchange_method,
                "backend": self.backend_name, "steps": self.steps, "delta": self.delta}

    def close(self) -> None:
        """Free the persistent requests and the duplicated communicator."""
        for reqs in self._requests.values():
            for r in reqs:
                r.Free()
        self._requests = {}
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        if self.comm is not None:
            self.comm.Free()
            self.comm = None
