"""The sub-domain the §6.1.3 exchange listings work on, and the check of their ghosts.

A 1-D split along x: rank p owns an (Lz+2, Ly+2, Lx+2) array with one ghost layer; its
interior holds 1000·p + 100·i + 10·j + k, its ghosts start at -1. After an exchange in x
the left ghost plane (i = 0) must hold the left neighbour's last interior plane (i = Lx)
and the right ghost plane (i = Lx+1) the right neighbour's first (i = 1). As in the
thesis's listings, -2 marks a missing neighbour.
"""

from __future__ import annotations

import numpy as np

Lx, Ly, Lz = 4, 3, 2
NO_NEIGHBOUR = -2  # the thesis's marker for "no process there" (pypar has no PROC_NULL)


def value(p: int, k, j, i):
    return 1000.0 * p + 100.0 * i + 10.0 * j + k


def subdomain(rank: int) -> np.ndarray:
    k, j, i = np.meshgrid(np.arange(Lz + 2), np.arange(Ly + 2), np.arange(Lx + 2), indexing="ij")
    u = np.full((Lz + 2, Ly + 2, Lx + 2), -1.0)
    inner = (slice(1, Lz + 1), slice(1, Ly + 1), slice(1, Lx + 1))
    u[inner] = value(rank, k, j, i)[inner]
    return u


def neighbours(rank: int, size: int) -> tuple[int, int]:
    """(x1, x2): left and right neighbour, NO_NEIGHBOUR at the ends."""
    return (rank - 1 if rank > 0 else NO_NEIGHBOUR), (rank + 1 if rank + 1 < size else NO_NEIGHBOUR)


def ghosts(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return u[1:Lz + 1, 1:Ly + 1, 0], u[1:Lz + 1, 1:Ly + 1, Lx + 1]


def expected_ghosts(rank: int, size: int, missing: float = -1.0) -> tuple[np.ndarray, np.ndarray]:
    """What the ghost planes must hold; *missing* where there is no neighbour."""
    k, j = np.meshgrid(np.arange(1, Lz + 1), np.arange(1, Ly + 1), indexing="ij")
    left = value(rank - 1, k, j, Lx) if rank > 0 else np.full((Lz, Ly), -1.0)
    right = value(rank + 1, k, j, 1) if rank + 1 < size else np.full((Lz, Ly), missing)
    return left, right


def check(u: np.ndarray, rank: int, size: int, missing: float = -1.0) -> bool:
    left, right = ghosts(u)
    want_left, want_right = expected_ghosts(rank, size, missing)
    return bool(np.array_equal(left, want_left) and np.array_equal(right, want_right))
