"""A field reduced to what a screen shows: block means at display resolution, exact extremes.

A live panel draws a picture of a few hundred pixels per side; gathering a 4097² field
(134 MB) to draw it would move bytes no screen shows. Here every rank reduces **its own
block** before anything moves, and rank 0 adds the pieces up:

* Each axis of ``n`` points is cut into ``out = min(n, resolution)`` **bins by global
  index**: point ``i`` belongs to bin ``floor(i · out / n)``. The bins depend only on the
  global mesh, never on the decomposition, so the picture is the same at any rank count.
* Each rank sums its points per bin (``numpy.add.reduceat`` along each axis). A bin that
  straddles a block boundary gets a partial sum from each owner; one ``Gatherv`` brings
  every rank's partial bins to rank 0, which adds them and divides by the bins' point
  counts (known from the mesh alone). About one picture of doubles moves, whatever the mesh.
* Block **means**, not a strided subsample: a smooth field looks the same either way,
  but a mean never shows a value the field does not hold in that area and does not alias
  a fine pattern into a coarse false one. Means shrink the extremes, so the exact minimum
  and maximum of the whole field travel with the picture (one ``Reduce``) for the colour scale.

When the mesh is at or below the resolution on every axis nothing is averaged: the picture
is the field itself, gathered as before (bit for bit what the exact calls return).

>>> reduce_picture(np.arange(10.0), 4).values   # doctest: +SKIP
array([1. , 3.5, 6. , 8.5])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mpiworkbench.core import mpi
from mpiworkbench.solvers.decomposition import gather_blocks

__all__ = ["DEFAULT_RESOLUTION", "Picture", "check_resolution", "gather_picture", "picture_shape", "reduce_picture"]

#: Points per side of a picture when nobody says (a panel passes the pixels its image has).
DEFAULT_RESOLUTION = 512


@dataclass
class Picture:
    """A field as a screen shows it.

    Attributes
    ----------
    values : numpy.ndarray
        Bin means, ``picture_shape(shape, resolution)``; the field itself when not reduced.
    vmin, vmax : float
        The exact minimum and maximum of the whole field (not of the means).
    shape : tuple of int
        The whole field's shape.
    """

    values: np.ndarray
    vmin: float
    vmax: float
    shape: tuple[int, ...]

    @property
    def reduced(self) -> bool:
        """Whether the values are bin means (the field is larger than the picture)."""
        return tuple(self.values.shape) != tuple(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the picture's values (what a frame moves)."""
        return int(self.values.nbytes)


def check_resolution(resolution) -> int | None:
    """*resolution* as an int ≥ 1, or ``None`` (the exact field); ``ValueError`` otherwise.

    Raises
    ------
    ValueError
        Naming the value and what to pass instead.
    """
    if resolution is None:
        return None
    if isinstance(resolution, (bool, np.bool_)) or not isinstance(resolution, (int, np.integer)) or resolution < 1:
        raise ValueError(
            f"resolution must be a positive whole number of points per side (e.g. "
            f"{DEFAULT_RESOLUTION}, the pixels the picture is drawn at) or None for the exact "
            f"field; got {resolution!r}"
        )
    return int(resolution)


def picture_shape(shape: Sequence[int], resolution: int | None) -> tuple[int, ...]:
    """Bins per axis: ``min(n, resolution)`` (the shape itself for ``None``)."""
    resolution = check_resolution(resolution)
    return tuple(int(n) if resolution is None else min(int(n), resolution) for n in shape)


def _bins(start: int, stop: int, n: int, out: int) -> tuple[int, np.ndarray]:
    """First bin of the points ``[start, stop)`` of an axis of *n* points in *out* bins, and
    the local offsets where each of their bins begins (``reduceat``'s indices)."""
    ids = (np.arange(start, stop, dtype=np.int64) * out) // n
    starts = np.concatenate(([0], np.flatnonzero(np.diff(ids)) + 1))
    return int(ids[0]), starts


def _counts(n: int, out: int) -> np.ndarray:
    """Points per bin along an axis of *n* points in *out* bins."""
    return np.bincount((np.arange(n, dtype=np.int64) * out) // n, minlength=out).astype(np.float64)


def _partial(block: np.ndarray, ranges: Sequence[tuple[int, int]], shape: Sequence[int],
             out: Sequence[int]) -> tuple[tuple[slice, ...], np.ndarray]:
    """Where a block's partial bin sums go in the picture, and the sums."""
    sums = np.asarray(block, dtype=np.float64)
    where = []
    for axis, ((a, b), n, o) in enumerate(zip(ranges, shape, out)):
        first, starts = _bins(a, b, n, o)
        where.append(slice(first, first + len(starts)))
        if len(starts) == b - a:  # an axis within the resolution stays as it is
            continue
        if axis == sums.ndim - 1:  # along the contiguous axis reduceat streams through memory
            sums = np.add.reduceat(sums, starts, axis=axis)
        else:
            # across rows: one vectorised sum of whole rows per bin (reduceat across rows
            # walks column by column, far slower on a big block; measured: docs/measurements.md,
            # Frames bounded by the screen)
            stops = [*starts[1:], b - a]
            index = [slice(None)] * sums.ndim
            parts = []
            for lo, hi in zip(starts, stops):
                index[axis] = slice(lo, hi)
                parts.append(sums[tuple(index)].sum(axis=axis))
            sums = np.stack(parts, axis=axis)
    return tuple(where), sums


def _span(ranges: Sequence[tuple[int, int]], shape: Sequence[int], out: Sequence[int]) -> tuple[slice, ...]:
    """The bins a block of global *ranges* touches (empty if the block is)."""
    if any(b <= a for a, b in ranges):
        return tuple(slice(0, 0) for _ in ranges)
    return tuple(slice(a * o // n, (b - 1) * o // n + 1) for (a, b), n, o in zip(ranges, shape, out))


def reduce_picture(field: np.ndarray, resolution: int | None = DEFAULT_RESOLUTION) -> Picture:
    """The :class:`Picture` of a whole *field* held in one place (serial; the reference the
    distributed :func:`gather_picture` equals, and what a notebook uses on a field it holds)."""
    field = np.asarray(field, dtype=np.float64)
    out = picture_shape(field.shape, resolution)
    vmin, vmax = (float(field.min()), float(field.max())) if field.size else (math.inf, -math.inf)
    if out == field.shape:
        return Picture(field.copy(), vmin, vmax, tuple(field.shape))
    _, sums = _partial(field, [(0, n) for n in field.shape], field.shape, out)
    return Picture(sums / _outer_counts(field.shape, out), vmin, vmax, tuple(field.shape))


def _outer_counts(shape: Sequence[int], out: Sequence[int]) -> np.ndarray:
    counts = np.ones(())
    for n, o in zip(shape, out):
        counts = np.multiply.outer(counts, _counts(n, o))
    return counts


def gather_picture(comm, local: np.ndarray, ranges: Sequence[Sequence[tuple[int, int]]], shape: Sequence[int],
                   resolution: int | None = DEFAULT_RESOLUTION, root: int = 0) -> Picture | None:
    """Collective: the :class:`Picture` of a field spread over *comm*, on *root* (``None`` elsewhere).

    Parameters
    ----------
    comm
        Communicator of the blocks' owners.
    local
        This rank's block (owned points only; empty if it holds none of the field).
    ranges
        Every rank's block as global ``(start, stop)`` per axis, in rank order (the same
        list on every rank; an empty range for a rank that holds nothing).
    shape
        The whole field's shape.
    resolution
        Most points per side of the picture; ``None``: the exact field (no averaging).
    root
        The rank that gets the picture.

    Returns
    -------
    Picture or None
        On *root*; ``None`` on the other ranks.

    Raises
    ------
    ValueError
        For a bad *resolution* (on every rank alike: it is checked before anything moves).
    """
    MPI = mpi.MPI()
    shape = tuple(int(n) for n in shape)
    out = picture_shape(shape, resolution)
    local = np.asarray(local, dtype=np.float64)
    extremes = np.array([-local.min(), local.max()]) if local.size else np.array([-math.inf, -math.inf])
    both = np.empty(2) if comm.Get_rank() == root else None
    comm.Reduce(extremes, both, op=MPI.MAX, root=root)  # −min and max in one reduction
    mine = ranges[comm.Get_rank()]
    if out == shape:  # at or below the resolution: the field itself, as the exact calls gather it
        pieces = [(r, tuple(slice(a, b) for a, b in rr)) for r, rr in enumerate(ranges)]
        values = gather_blocks(comm, local, pieces, shape, root=root)
    else:
        spans = [_span(rr, shape, out) for rr in ranges]
        sums = _partial(local, mine, shape, out)[1] if local.size else np.empty(0)
        send = np.ascontiguousarray(sums, dtype=np.float64).ravel()
        if comm.Get_rank() != root:
            comm.Gatherv(send, None, root=root)
            return None
        counts = [math.prod(s.stop - s.start for s in sp) for sp in spans]
        displs = [sum(counts[:i]) for i in range(len(counts))]
        recv = np.empty(sum(counts))
        comm.Gatherv(send, [recv, counts, displs, MPI.DOUBLE], root=root)
        values = np.zeros(out)
        # in rank order: a bin straddling blocks adds its partial sums the same way every time
        for sp, start, count in zip(spans, displs, counts):
            if count:
                values[sp] += recv[start:start + count].reshape(tuple(s.stop - s.start for s in sp))
        values /= _outer_counts(shape, out)
    if comm.Get_rank() != root:
        return None
    return Picture(values, float(-both[0]), float(both[1]), shape)
