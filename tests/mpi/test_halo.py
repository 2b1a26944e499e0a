"""Halo exchange fills every internal ghost with the neighbour's value (any rank count, any communicator)."""

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.solvers.decomposition import create_cart, decompose
from mpiworkbench.solvers.halo import EXCHANGES, HaloExchange, mirror_boundaries


def _runnable(method):
    if method == "none":
        return False
    if method.startswith("backend:"):
        from mpiworkbench.backends import is_available
        return is_available(method.split(":", 1)[1])
    return True


RUNNABLE = [m for m in EXCHANGES if _runnable(m)]


def _global_index_field(shape):
    return np.arange(np.prod(shape), dtype=np.float64).reshape(shape)


def _local_with_nan_ghosts(d, coords, glob):
    local = np.full(tuple(n + 2 for n in d.local_shape(coords)), np.nan)
    local[(slice(1, -1),) * d.ndim] = glob[d.slices(coords)]
    return local


def _expected(d, coords, glob):
    """What the ghost-filled local array must be: neighbours' values, mirror at the boundary."""
    mirrored = glob
    for axis in range(d.ndim):
        n = glob.shape[axis]
        idx = [1] + list(range(n)) + [n - 2]
        mirrored = np.take(mirrored, idx, axis=axis)
    sl = tuple(slice(a, b + 2) for a, b in d.ranges(coords))
    return mirrored[sl]


@pytest.mark.parametrize("method", RUNNABLE)
@pytest.mark.parametrize("shape", [(7, 5, 4), (10, 3, 6), (9, 8)])
def test_exchange_fills_faces_with_neighbour_values(comm, method, shape):
    if method == "backend:numba-mpi" and comm.size != MPI.COMM_WORLD.size:
        pytest.skip("numba-mpi talks only to COMM_WORLD: it cannot run on a smaller communicator")
    d = decompose(shape, comm.size, min_points=2)
    cart = create_cart(comm, d)
    coords = d.coords_of(comm.rank)
    glob = _global_index_field(shape)
    u = _local_with_nan_ghosts(d, coords, glob)
    halo = HaloExchange(cart, u.shape, method)
    try:
        halo.exchange(u)
        mirror_boundaries(u, coords, d.dims)
        expected = _expected(d, coords, glob)
        # faces only: points with at most one ghost index
        ghosts = sum(
            ((np.arange(n) == 0) | (np.arange(n) == n - 1)).reshape([-1 if a == ax else 1 for a in range(u.ndim)])
            .astype(int)
            for ax, n in enumerate(u.shape)
        )
        faces = np.broadcast_to(ghosts <= 1, u.shape)
        np.testing.assert_array_equal(u[faces], expected[faces])
    finally:
        halo.free()
        cart.Free()


def test_missing_exchange_leaves_internal_ghosts_stale(comm):
    d = decompose((8, 6, 5), comm.size, min_points=2)
    cart = create_cart(comm, d)
    coords = d.coords_of(comm.rank)
    u = _local_with_nan_ghosts(d, coords, _global_index_field(d.shape))
    halo = HaloExchange(cart, u.shape, "none")
    halo.exchange(u)
    mirror_boundaries(u, coords, d.dims)
    lo, hi = cart.Shift(0, 1)
    assert np.isnan(u[0, 1, 1]) == (lo != MPI.PROC_NULL)
    assert np.isnan(u[-1, 1, 1]) == (hi != MPI.PROC_NULL)
    cart.Free()


def test_unknown_method_and_wrong_array_are_rejected(comm):
    d = decompose((6, 6, 6), comm.size, min_points=2)
    cart = create_cart(comm, d)
    shape = tuple(n + 2 for n in d.local_shape(d.coords_of(comm.rank)))
    with pytest.raises(ValueError, match="exchange must be one of .*got 'smoke'"):
        HaloExchange(cart, shape, "smoke")
    halo = HaloExchange(cart, shape, "sendrecv")
    with pytest.raises(ValueError, match="C-contiguous float64 array of shape"):
        halo.exchange(np.zeros(shape, dtype=np.float32))
    halo.free()
    cart.Free()
