"""The pure-Python decomposition agrees with MPI's Compute_dims and Cartesian topology."""

from mpi4py import MPI

from mpiworkbench.solvers.decomposition import compute_dims, create_cart, decompose
def test_compute_dims_matches_mpi():
    for nprocs in range(1, 33):
        for ndim in (1, 2, 3):
            assert compute_dims(nprocs, ndim) == tuple(MPI.Compute_dims(nprocs, ndim))


def test_cart_coords_and_neighbours_match_the_decomposition(comm):
    for shape in [(13, 7, 5), (9, 9)]:
        d = decompose(shape, comm.size, min_points=2)
        cart = create_cart(comm, d)
        try:
            assert cart.rank == comm.rank
            assert tuple(cart.Get_coords(cart.rank)) == d.coords_of(comm.rank)
            coords = d.coords_of(comm.rank)
            for axis in range(d.ndim):
                lo, hi = cart.Shift(axis, 1)
                below = list(coords); below[axis] -= 1
                above = list(coords); above[axis] += 1
                assert lo == (d.rank_of(below) if below[axis] >= 0 else MPI.PROC_NULL)
                assert hi == (d.rank_of(above) if above[axis] < d.dims[axis] else MPI.PROC_NULL)
            sizes = comm.allgather(d.local_shape(coords))
            assert sum(s[0] * s[1] if len(s) == 2 else s[0] * s[1] * s[2] for s in sizes) == (
                shape[0] * shape[1] * (shape[2] if len(shape) == 3 else 1)
            )
        finally:
            cart.Free()
