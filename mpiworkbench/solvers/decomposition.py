"""Cartesian block decomposition of an n-D mesh over a grid of MPI ranks.

A mesh of ``shape`` points is cut into ``dims[0] × dims[1] × …`` blocks, one per rank.
Each axis is split as evenly as possible: with ``n`` points over ``d`` blocks, the first
``n % d`` blocks get one point more (129 points on 2 ranks → 65 + 64). Ranks are laid
out in row-major order, the order ``MPI.Comm.Create_cart(..., reorder=False)`` uses, so
``cart.rank == comm.rank``.

Everything here except :func:`create_cart` is plain Python: a notebook kernel (not in
the MPI world) uses it to draw subdomain boundaries, and the engines use it to know
which block they own.

>>> d = decompose((129, 129, 129), 2)
>>> d.dims
(2, 1, 1)
>>> d.ranges(d.coords_of(1))
((65, 129), (0, 129), (0, 129))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from mpiworkbench.core import mpi

#: Axis names used in error messages (beyond three axes, axes are named by number).
AXIS_NAMES = ("x", "y", "z")


def axis_name(axis: int, ndim: int) -> str:
    """``x``, ``y``, ``z`` for meshes of up to three axes, else ``axis 3`` etc."""
    return AXIS_NAMES[axis] if ndim <= len(AXIS_NAMES) else f"axis {axis}"


def split_sizes(n: int, parts: int) -> list[int]:
    """Sizes of the *parts* blocks of *n* points, the larger ones first."""
    base, extra = divmod(n, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def block_range(n: int, parts: int, index: int) -> tuple[int, int]:
    """``(start, stop)`` of block *index* when *n* points are split into *parts* blocks."""
    base, extra = divmod(n, parts)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)


def _factorizations(n: int, slots: int, largest: int) -> list[tuple[int, ...]]:
    """All non-increasing tuples of *slots* factors with product *n*, each ≤ *largest*."""
    if slots == 1:
        return [(n,)] if n <= largest else []
    found = []
    for f in range(min(n, largest), 0, -1):
        if n % f == 0:
            found.extend((f, *rest) for rest in _factorizations(n // f, slots - 1, f))
    return found


def compute_dims(nprocs: int, ndim: int, dims: Sequence[int] | None = None) -> tuple[int, ...]:
    """Balanced process grid, like ``MPI.Compute_dims`` (``MPI_Dims_create``).

    Entries of *dims* that are positive are kept; zeros are filled so that the free
    entries are as close to each other as possible, in non-increasing order.
    Works without MPI, so the notebook kernel computes the same grid as the engines.

    Parameters
    ----------
    nprocs
        Number of ranks (blocks), at least 1.
    ndim
        Number of mesh axes.
    dims
        Blocks per axis, ``0`` where the function chooses (``None``: all free).

    Returns
    -------
    tuple of int
        Blocks per axis; their product is *nprocs*.

    Raises
    ------
    ValueError
        When the fixed entries cannot make *nprocs* blocks, naming what to change.
    """
    if not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"the number of ranks must be a positive integer; got {nprocs!r}")
    if not isinstance(ndim, int) or ndim < 1:
        raise ValueError(f"the number of axes must be a positive integer; got {ndim!r}")
    given = [0] * ndim if dims is None else [int(d) for d in dims]
    if len(given) != ndim:
        raise ValueError(
            f"dims must have one entry per mesh axis ({ndim}); got {len(given)} entries {tuple(given)}"
        )
    if any(d < 0 for d in given):
        raise ValueError(f"dims entries must be positive (or 0 to let MPI choose); got {tuple(given)}")
    fixed = math.prod(d for d in given if d > 0)
    free = [i for i, d in enumerate(given) if d == 0]
    if not free:
        if fixed != nprocs:
            raise ValueError(
                f"dims {'x'.join(map(str, given))} make {fixed} blocks but there are {nprocs} "
                f"rank(s); give dims whose product is {nprocs}"
            )
        return tuple(given)
    if nprocs % fixed != 0:
        raise ValueError(
            f"dims {tuple(given)}: the fixed entries multiply to {fixed}, which does not divide "
            f"the {nprocs} rank(s); change dims or the number of ranks"
        )
    remaining = nprocs // fixed
    # most balanced: smallest largest factor, then smallest next factor, and so on
    candidates = _factorizations(remaining, len(free), remaining)
    best = min(candidates, key=lambda t: (t[0], t))
    result = list(given)
    for i, f in zip(free, best):
        result[i] = f
    return tuple(result)


@dataclass(frozen=True)
class Decomposition:
    """A mesh of ``shape`` points split into a ``dims`` grid of blocks (one per rank).

    Blocks are numbered in row-major order of their coordinates (as
    ``Create_cart(reorder=False)`` numbers ranks); along each axis the first blocks get
    one point more when the points do not split evenly (:func:`split_sizes`).

    Parameters
    ----------
    shape
        Mesh points per axis.
    dims
        Blocks per axis; their product is the number of ranks.
    """

    shape: tuple[int, ...]
    dims: tuple[int, ...]

    @property
    def ndim(self) -> int:
        """Number of mesh axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of blocks (ranks)."""
        return math.prod(self.dims)

    def coords_of(self, rank: int) -> tuple[int, ...]:
        """Block coordinates of *rank* (row-major, as ``Create_cart(reorder=False)``)."""
        if not 0 <= rank < self.size:
            raise ValueError(f"rank must be between 0 and {self.size - 1}; got {rank}")
        coords = []
        for d in reversed(self.dims):
            rank, c = divmod(rank, d)
            coords.append(c)
        return tuple(reversed(coords))

    def rank_of(self, coords: Sequence[int]) -> int:
        """Rank owning the block at *coords*."""
        rank = 0
        for c, d in zip(coords, self.dims):
            if not 0 <= c < d:
                raise ValueError(f"block coordinates {tuple(coords)} outside the {self.dims} grid")
            rank = rank * d + c
        return rank

    def ranges(self, coords: Sequence[int]) -> tuple[tuple[int, int], ...]:
        """``(start, stop)`` global index range per axis of the block at *coords*."""
        return tuple(block_range(n, d, c) for n, d, c in zip(self.shape, self.dims, coords))

    def slices(self, coords: Sequence[int]) -> tuple[slice, ...]:
        """The block at *coords* as slices into the global array."""
        return tuple(slice(a, b) for a, b in self.ranges(coords))

    def local_shape(self, coords: Sequence[int]) -> tuple[int, ...]:
        """Number of points the block at *coords* owns per axis (without ghosts)."""
        return tuple(b - a for a, b in self.ranges(coords))

    def cuts(self, axis: int) -> list[int]:
        """Global indices where a new block starts along *axis* (for drawing boundaries)."""
        return [block_range(self.shape[axis], self.dims[axis], c)[0] for c in range(1, self.dims[axis])]

    def blocks(self) -> list[tuple[int, tuple[slice, ...]]]:
        """``(rank, slices)`` of every block, in rank order."""
        return [(r, self.slices(self.coords_of(r))) for r in range(self.size)]

    def plane_blocks(self, axis: int, index: int) -> list[tuple[int, tuple[slice, ...]]]:
        """``(rank, slices)`` of every block's part of the plane *index* along *axis*.

        The slices index the ``ndim − 1``-dimensional plane; a block the plane misses gets
        empty slices (it contributes nothing to a gather).
        """
        pieces = []
        for rank, sl in self.blocks():
            hit = sl[axis].start <= index < sl[axis].stop
            pieces.append((rank, tuple(x if hit else slice(0, 0) for a, x in enumerate(sl) if a != axis)))
        return pieces


def decompose(
    shape: int | Sequence[int],
    nprocs: int,
    dims: Sequence[int] | None = None,
    *,
    min_points: int = 1,
) -> Decomposition:
    """Split a mesh of *shape* points over *nprocs* ranks, checking every block is big enough.

    Parameters
    ----------
    shape
        Points per axis (an int means a 1-D mesh).
    nprocs
        Number of ranks; the product of the dims.
    dims
        Blocks per axis; ``None`` or zeros let :func:`compute_dims` choose.
    min_points
        Smallest number of points a block may own along any axis (a stencil with one
        ghost layer and a mirrored boundary needs at least a few).

    Returns
    -------
    Decomposition
        The checked decomposition.

    Raises
    ------
    ValueError
        With the offending value and what to change, e.g.
        ``mesh must be at least 3 points per axis per rank; got 2 on axis z with 4 ranks``.
    """
    shape_t = (shape,) if isinstance(shape, int) else tuple(shape)
    if not shape_t or any(not isinstance(n, int) or isinstance(n, bool) for n in shape_t):
        raise ValueError(f"mesh shape must be a sequence of integers; got {shape!r}")
    ndim = len(shape_t)
    for axis, n in enumerate(shape_t):
        if n < min_points:
            raise ValueError(
                f"mesh must have at least {min_points} points per axis; got {n} on axis "
                f"{axis_name(axis, ndim)}"
            )
    dims_t = compute_dims(nprocs, ndim, dims)
    for axis, (n, d) in enumerate(zip(shape_t, dims_t)):
        smallest = n // d
        if smallest < min_points:
            raise ValueError(
                f"mesh must be at least {min_points} points per axis per rank; got {smallest} on "
                f"axis {axis_name(axis, ndim)} with {d} ranks ({n} points over dims "
                f"{'x'.join(map(str, dims_t))}); use a finer mesh, fewer ranks or other dims"
            )
    return Decomposition(shape_t, dims_t)


def create_cart(comm, decomposition: Decomposition):
    """Non-periodic Cartesian communicator over *comm* for *decomposition* (``reorder=False``).

    Collective on *comm*; ``cart.rank == comm.rank`` and ``cart.Get_coords(r)`` equals
    ``decomposition.coords_of(r)``.
    """
    if comm.size != decomposition.size:
        raise ValueError(
            f"the decomposition has {decomposition.size} blocks (dims {decomposition.dims}) but the "
            f"communicator has {comm.size} rank(s)"
        )
    return comm.Create_cart(list(decomposition.dims), periods=[False] * decomposition.ndim, reorder=False)


def gather_blocks(comm, local, pieces: Sequence[tuple[int, tuple[slice, ...]]], out_shape: Sequence[int], root: int = 0):
    """Collective: assemble every rank's block into one array on *root* (one ``Gatherv``).

    Parameters
    ----------
    comm
        Communicator of the blocks' owners.
    local
        This rank's block (any shape; sent C-contiguous as float64).
    pieces
        ``(rank, slices)`` per rank, in rank order: where each rank's block goes in the
        result (an empty slice for a rank that contributes nothing).
    out_shape
        Shape of the assembled array.
    root
        The rank that receives it.

    Returns
    -------
    numpy.ndarray or None
        The assembled array on *root*, ``None`` elsewhere.
    """
    import numpy as np

    sendbuf = np.ascontiguousarray(local, dtype=np.float64)
    if comm.Get_rank() != root:
        comm.Gatherv(sendbuf, None, root=root)
        return None
    counts = [math.prod(s.stop - s.start for s in sl) for _, sl in pieces]
    displs = [sum(counts[:i]) for i in range(len(counts))]
    recv = np.empty(sum(counts))
    comm.Gatherv(sendbuf, [recv, counts, displs, mpi.MPI().DOUBLE], root=root)
    out = np.empty(tuple(out_shape))
    for (_, sl), start, count in zip(pieces, displs, counts):
        out[sl] = recv[start : start + count].reshape(tuple(s.stop - s.start for s in sl))
    return out
