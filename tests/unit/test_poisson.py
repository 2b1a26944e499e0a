"""The Poisson blocks (no MPI): every rank's CSR block is exactly its rows of the global matrix."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from mpiworkbench.solvers.cg import poisson
def _global_columns(block: poisson.Block) -> np.ndarray:
    """Global unknown index of each entry of the block's local value vector (-1: unused)."""
    mesh = block.mesh
    gmap = np.full(block.n_owned + block.n_ghost, -1)
    ii, jj = np.meshgrid(np.arange(block.i0, block.i1), np.arange(block.j0, block.j1), indexing="ij")
    gmap[: block.n_owned] = (ii * mesh + jj).ravel()
    g = block.ghost_slices()
    if block.south is not None:
        gmap[g["south"]] = (block.i0 - 1) * mesh + np.arange(block.j0, block.j1)
    if block.north is not None:
        gmap[g["north"]] = block.i1 * mesh + np.arange(block.j0, block.j1)
    if block.west is not None:
        gmap[g["west"]] = np.arange(block.i0, block.i1) * mesh + block.j0 - 1
    if block.east is not None:
        gmap[g["east"]] = np.arange(block.i0, block.i1) * mesh + block.j1
    return gmap


@pytest.mark.parametrize(
    "mesh, dims",
    [(1, (1, 1)), (5, (1, 1)), (7, (2, 1)), (7, (3, 1)), (7, (1, 3)), (8, (2, 3)), (9, (3, 2)), (4, (4, 1))],
)
def test_local_blocks_are_the_rows_of_the_global_matrix(mesh, dims):
    glob = poisson.global_matrix(mesh).toarray()
    seen = []
    for block in poisson.make_blocks(mesh, dims):
        local = poisson.local_matrix(block).toarray()
        gmap = _global_columns(block)
        used = np.flatnonzero(np.any(local != 0, axis=0))
        assert np.all(gmap[used] >= 0), "a matrix entry reads a ghost slot without a neighbour"
        full = np.zeros((block.n_owned, mesh * mesh))
        np.add.at(full.T, gmap[used], local[:, used].T)
        rows = gmap[: block.n_owned]
        np.testing.assert_array_equal(full, glob[rows])
        seen.extend(rows.tolist())
    assert sorted(seen) == list(range(mesh * mesh))


@pytest.mark.parametrize(
    "mesh, dims",
    [(1, (1, 1)), (5, (1, 1)), (7, (2, 1)), (7, (3, 1)), (7, (1, 3)), (8, (2, 3)), (9, (3, 2)), (4, (4, 1)), (33, (2, 2))],
)
def test_the_local_operator_is_the_csr_product_bit_for_bit(mesh, dims):
    rng = np.random.default_rng(mesh)
    for block in poisson.make_blocks(mesh, dims):
        matrix, operator = poisson.local_matrix(block), poisson.LocalOperator(block)
        assert operator.shape == matrix.shape
        x = rng.standard_normal(matrix.shape[1]) * 10.0 ** rng.integers(-8, 8, matrix.shape[1])
        out = np.full(block.n_owned, np.nan)
        assert operator(x, out) is out
        np.testing.assert_array_equal(out, matrix @ x)  # the same sums in the same order
        np.testing.assert_array_equal(operator(x), matrix @ x)
    with pytest.raises(ValueError, match="local value vector of"):
        operator(np.zeros(3))


def test_uneven_row_split_of_the_thesis_mesh():
    blocks = poisson.make_blocks(1025, (2, 1))
    assert [(b.i0, b.i1) for b in blocks] == [(0, 513), (513, 1025)]
    assert blocks[0].north == 1 and blocks[1].south == 0 and blocks[0].south is None


def test_matrix_is_the_integer_stencil_and_spd():
    a = poisson.global_matrix(6)
    assert a.diagonal().tolist() == [4.0] * 36
    assert (a - a.T).nnz == 0
    assert spla.eigsh(a, k=1, which="SA", return_eigenvectors=False)[0] > 0


def test_manufactured_solution_is_exact_at_the_nodes():
    mesh = 17
    u = poisson.exact_solution(mesh).ravel()
    b = poisson.global_rhs(mesh)
    residual = poisson.global_matrix(mesh) @ u - b
    assert np.max(np.abs(residual)) < 1e-15
    np.testing.assert_allclose(spla.spsolve(poisson.global_matrix(mesh).tocsc(), b), u, rtol=0, atol=1e-14)


def test_rhs_forms_agree():
    mesh = 9
    block = poisson.make_blocks(mesh, (1, 1))[0]
    named = poisson.local_rhs(block, "manufactured")
    h2 = poisson.grid_spacing(mesh) ** 2
    from_callable = poisson.local_rhs(block, lambda x, y: 2 * (x * (1 - x) + y * (1 - y)))
    from_array = poisson.local_rhs(block, named.reshape(mesh, mesh))
    np.testing.assert_array_equal(named, from_callable)
    np.testing.assert_array_equal(named, from_array)
    np.testing.assert_allclose(poisson.local_rhs(block, "ones"), h2)


def test_rhs_of_wrong_length_names_the_sizes():
    block = poisson.make_blocks(4, (1, 1))[0]
    with pytest.raises(ValueError, match=r"rhs must have mesh² = 16 values .* got shape \(15,\)"):
        poisson.local_rhs(block, np.ones(15))
    with pytest.raises(ValueError, match="rhs must be one of"):
        poisson.local_rhs(block, "sine")


@pytest.mark.parametrize("mesh", [0, -3, 2.5, True])
def test_bad_mesh_is_refused(mesh):
    with pytest.raises(ValueError, match="mesh must be an integer of at least 1"):
        poisson.make_blocks(mesh, (1, 1))


def test_mesh_too_small_for_the_ranks():
    with pytest.raises(ValueError, match="got mesh=2 split into 3 blocks along y"):
        poisson.make_blocks(2, (3, 1))


def test_partition_dims():
    assert poisson.partition_dims("rows", 3) == (3, 1)
    assert poisson.partition_dims("blocks", 4) == (2, 2)
    assert poisson.partition_dims("blocks", 3, (1, 3)) == (1, 3)
    with pytest.raises(ValueError, match="partition must be 'rows' or 'blocks'"):
        poisson.partition_dims("cols", 2)
    with pytest.raises(ValueError, match="partition='rows' always uses dims"):
        poisson.partition_dims("rows", 2, (1, 2))
