"""The 2-D Poisson test problem of thesis §6.2: matrix blocks, right-hand side, exact solution.

The system is the 5-point negative Laplacian on the ``mesh × mesh`` interior points of the
unit square, homogeneous Dirichlet boundary, ``h = 1/(mesh+1)``, scaled to the integer stencil
(4 on the diagonal, −1 per neighbour): symmetric positive definite. Grid point ``(i, j)`` sits
at ``x = (j+1)h``, ``y = (i+1)h``; unknowns are ordered row by row (``k = i*mesh + j``).

The right-hand side is ``b = h² f``. The default (manufactured) ``f = 2[x(1−x) + y(1−y)]``
has the discrete solution ``u = x(1−x)y(1−y)`` *exactly* at the nodes (second differences
of quadratics are exact), so the error against it measures the solver alone.

Each rank owns a rectangular block of grid points (row blocks are the thesis's Fig. 6.8;
2-D blocks are the option) and builds only its own CSR block of matrix rows. Its *local
value* vector (thesis: ``local_value``) is laid out as

``[owned block, row by row | south ghost row | north ghost row | west ghost col | east ghost col]``

so the owned part is a contiguous view and each ghost strip is a contiguous receive buffer.
Ghost strips without a neighbour (physical boundary) stay zero and no matrix entry reads them.
This module needs neither MPI nor a communicator: everything is a function of the layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from typing import TYPE_CHECKING

import numpy as np

from mpiworkbench.solvers.decomposition import compute_dims, decompose

if TYPE_CHECKING:  # SciPy loads when a matrix is built: the CLI reads the names without it
    import scipy.sparse as sp

#: Right-hand sides known by name.
RHS_NAMES = ("manufactured", "ones", "eigenvector")
#: Ways to cut the grid over the ranks: row blocks (thesis Fig. 6.8) or 2-D blocks.
PARTITIONS = ("rows", "blocks")


def grid_spacing(mesh: int) -> float:
    """``h = 1/(mesh+1)`` for *mesh* interior points per axis."""
    return 1.0 / (mesh + 1)


@dataclass(frozen=True)
class Block:
    """The grid points one rank owns and where its neighbours are.

    ``rows = [i0, i1)`` (y direction) and ``cols = [j0, j1)`` (x direction) of the
    ``mesh × mesh`` interior grid; neighbour ranks are ``None`` at a physical boundary.
    """

    mesh: int
    rank: int
    coords: tuple[int, int]
    dims: tuple[int, int]
    i0: int
    i1: int
    j0: int
    j1: int
    south: int | None
    north: int | None
    west: int | None
    east: int | None

    @property
    def shape(self) -> tuple[int, int]:
        return (self.i1 - self.i0, self.j1 - self.j0)

    @property
    def n_owned(self) -> int:
        return (self.i1 - self.i0) * (self.j1 - self.j0)

    @property
    def n_ghost(self) -> int:
        mi, mj = self.shape
        return 2 * mj + 2 * mi

    def ghost_slices(self) -> dict[str, slice]:
        """Where each ghost strip lives in the local value vector."""
        mi, mj = self.shape
        o = self.n_owned
        return {
            "south": slice(o, o + mj),
            "north": slice(o + mj, o + 2 * mj),
            "west": slice(o + 2 * mj, o + 2 * mj + mi),
            "east": slice(o + 2 * mj + mi, o + 2 * mj + 2 * mi),
        }

    def boundary_slices(self) -> dict[str, slice]:
        """Which owned entries each neighbour needs (the strip along the shared edge).

        South/north are contiguous rows; west/east are strided columns.
        """
        mi, mj = self.shape
        o = self.n_owned
        return {
            "south": slice(0, mj),
            "north": slice(o - mj, o),
            "west": slice(0, o, mj),
            "east": slice(mj - 1, o, mj),
        }


def partition_dims(partition: str, size: int, dims: Sequence[int] | None = None) -> tuple[int, int]:
    """Rank grid ``(row blocks, column blocks)`` for *partition* on *size* ranks.

    ``"rows"`` is the thesis's row partition ``(size, 1)``; ``"blocks"`` lets
    :func:`~mpiworkbench.solvers.decomposition.compute_dims` choose a near-square grid
    unless *dims* fixes it (e.g. ``(1, size)`` for column strips).
    """
    if partition == "rows":
        if dims is not None and tuple(dims) != (size, 1):
            raise ValueError(
                f"partition='rows' always uses dims ({size}, 1); got dims={tuple(dims)}; "
                "use partition='blocks' to choose dims"
            )
        return (size, 1)
    if partition == "blocks":
        if dims is not None and len(tuple(dims)) != 2:
            raise ValueError(f"dims must have two entries (row blocks, column blocks); got {tuple(dims)}")
        return compute_dims(size, 2, dims)  # type: ignore[return-value]
    raise ValueError(f"partition must be {' or '.join(map(repr, PARTITIONS))}; got {partition!r}")


def make_blocks(mesh: int, dims: tuple[int, int]) -> list[Block]:
    """Every rank's :class:`Block` for a ``dims`` rank grid, in rank (row-major) order."""
    if isinstance(mesh, bool) or not isinstance(mesh, (int, np.integer)) or mesh < 1:
        raise ValueError(f"mesh must be an integer of at least 1 interior point per axis; got {mesh!r}")
    mesh = int(mesh)
    py, px = dims
    for axis, parts in (("y (grid rows)", py), ("x (grid columns)", px)):
        if mesh < parts:
            raise ValueError(
                f"mesh must give every rank at least one grid point per axis; got mesh={mesh} "
                f"split into {parts} blocks along {axis}; use a larger mesh or fewer ranks"
            )
    layout = decompose((mesh, mesh), py * px, (py, px))
    blocks = []
    for rank in range(layout.size):
        ci, cj = layout.coords_of(rank)
        (i0, i1), (j0, j1) = layout.ranges((ci, cj))
        blocks.append(
            Block(
                mesh=mesh, rank=rank, coords=(ci, cj), dims=(py, px),
                i0=i0, i1=i1, j0=j0, j1=j1,
                south=layout.rank_of((ci - 1, cj)) if ci > 0 else None,
                north=layout.rank_of((ci + 1, cj)) if ci < py - 1 else None,
                west=layout.rank_of((ci, cj - 1)) if cj > 0 else None,
                east=layout.rank_of((ci, cj + 1)) if cj < px - 1 else None,
            )
        )
    return blocks


def local_matrix(block: Block) -> sp.csr_matrix:
    """This rank's rows of the 5-point matrix, columns indexing the local value vector.

    Shape ``(n_owned, n_owned + n_ghost)``; entries per row in the order south, west,
    diagonal, east, north. Built from index arithmetic: never the global matrix.
    """
    import scipy.sparse as sp

    mi, mj = block.shape
    n = block.n_owned
    ghosts = block.ghost_slices()
    li, lj = np.divmod(np.arange(n, dtype=np.int64), mj)
    gi, gj = li + block.i0, lj + block.j0
    local = np.arange(n, dtype=np.int64)
    cols = np.full((n, 5), -1, dtype=np.int64)
    # south (i-1), west (j-1), diagonal, east (j+1), north (i+1)
    cols[:, 0] = np.where(li > 0, local - mj, np.where(gi > 0, ghosts["south"].start + lj, -1))
    cols[:, 1] = np.where(lj > 0, local - 1, np.where(gj > 0, ghosts["west"].start + li, -1))
    cols[:, 2] = local
    cols[:, 3] = np.where(
        lj < mj - 1, local + 1, np.where(gj < block.mesh - 1, ghosts["east"].start + li, -1)
    )
    cols[:, 4] = np.where(
        li < mi - 1, local + mj, np.where(gi < block.mesh - 1, ghosts["north"].start + lj, -1)
    )
    vals = np.full((n, 5), -1.0)
    vals[:, 2] = 4.0
    keep = cols >= 0
    indptr = np.concatenate(([0], np.cumsum(keep.sum(axis=1))))
    index_dtype = np.int32 if n + block.n_ghost < 2**31 - 1 else np.int64
    return sp.csr_matrix(
        (vals[keep], cols[keep].astype(index_dtype), indptr.astype(index_dtype)),
        shape=(n, n + block.n_ghost),
    )


class LocalOperator:
    """This rank's rows of the 5-point matrix applied without storing them: what the solver's
    matvec calls. ``op(x, out)`` is :func:`local_matrix`'s ``A @ x`` bit for bit (the same
    entries summed in the same order, :func:`~mpiworkbench.solvers.cg.vectors.matvec_5point`),
    several times faster than SciPy's (measured: docs/measurements.md, Frames bounded by the
    screen): no index arrays to read, no result allocated per product, and no CSR block
    (0.5 GB at 4097² on 2 ranks) to build. The matrix itself is still there to look at:
    :func:`local_matrix`."""

    def __init__(self, block: Block):
        from mpiworkbench.solvers.cg.vectors import matvec_5point  # lazy: vectors imports numba; the registries (and --help) read this module

        self._kernel = matvec_5point
        self.shape = (block.n_owned, block.n_owned + block.n_ghost)
        self._rows, self._cols = block.shape
        ghosts = block.ghost_slices()
        # a ghost strip is read where the block has a neighbour (the strips the exchange fills)
        self._ghosts = tuple(ghosts[side].start if getattr(block, side) is not None else -1
                             for side in ("south", "west", "east", "north"))

    def __call__(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``A x`` into *out* (a new array without it)."""
        if x.shape != (self.shape[1],):
            raise ValueError(f"x must be a local value vector of {self.shape[1]} entries; got shape {x.shape}")
        out = np.empty(self.shape[0]) if out is None else out
        self._kernel(x, out, self._rows, self._cols, *self._ghosts)
        return out


def node_coordinates(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of the owned nodes, each of shape :attr:`Block.shape`."""
    h = grid_spacing(block.mesh)
    y = (np.arange(block.i0, block.i1) + 1) * h
    x = (np.arange(block.j0, block.j1) + 1) * h
    return np.meshgrid(x, y)


def manufactured_solution(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``u = x(1−x)y(1−y)``, the exact discrete solution for the default right-hand side."""
    return x * (1 - x) * y * (1 - y)


def exact_solution(mesh: int) -> np.ndarray:
    """``mesh × mesh`` array of ``x(1−x)y(1−y)`` at the interior nodes (row i ↔ y)."""
    h = grid_spacing(mesh)
    t = (np.arange(mesh) + 1) * h
    return np.outer(t * (1 - t), t * (1 - t))


def _named_rhs(name: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    if name == "manufactured":
        return lambda x, y: 2.0 * (x * (1 - x) + y * (1 - y))
    if name == "ones":
        return lambda x, y: np.ones_like(x)
    if name == "eigenvector":
        # An eigenvector of the discrete Laplacian: CG converges in one iteration.
        return lambda x, y: 2 * np.pi**2 * np.sin(np.pi * x) * np.sin(np.pi * y)
    raise ValueError(f"rhs must be one of {RHS_NAMES}, a callable f(x, y) or an array; got {name!r}")


def local_rhs(block: Block, rhs: str | Callable | np.ndarray | None = None) -> np.ndarray:
    """The owned part of ``b``, flattened in local row-major order.

    *rhs* is a name from :data:`RHS_NAMES` (default ``"manufactured"``), a vectorised
    ``f(x, y)`` (then ``b = h² f``), or the global ``b`` itself as ``mesh²`` values or a
    ``mesh × mesh`` array (used as given, no ``h²``).
    """
    if rhs is None:
        rhs = "manufactured"
    if isinstance(rhs, str) or callable(rhs):
        f = _named_rhs(rhs) if isinstance(rhs, str) else rhs
        x, y = node_coordinates(block)
        values = np.asarray(f(x, y), dtype=float)
        if values.shape != x.shape:
            values = np.broadcast_to(values, x.shape)
        return (grid_spacing(block.mesh) ** 2 * values).ravel()
    b = np.asarray(rhs, dtype=float)
    n = block.mesh
    if b.size != n * n or b.ndim not in (1, 2) or (b.ndim == 2 and b.shape != (n, n)):
        raise ValueError(
            f"rhs must have mesh² = {n * n} values (or shape ({n}, {n})); got shape {b.shape}; "
            "pass a callable f(x, y) to have it evaluated on each rank instead"
        )
    return np.ascontiguousarray(b.reshape(n, n)[block.i0 : block.i1, block.j0 : block.j1]).ravel()


def global_matrix(mesh: int) -> sp.csr_matrix:
    """The whole ``mesh² × mesh²`` matrix on one process — the serial reference for tests
    and benchmarks only (the distributed solver never builds it)."""
    import scipy.sparse as sp

    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(mesh, mesh))
    eye = sp.identity(mesh)
    return sp.csr_matrix(sp.kron(eye, t) + sp.kron(t, eye))


def global_rhs(mesh: int, rhs: str | Callable | np.ndarray | None = None) -> np.ndarray:
    """The whole ``b`` (length ``mesh²``) on one process, for serial references."""
    (block,) = make_blocks(mesh, (1, 1))
    return local_rhs(block, rhs)
