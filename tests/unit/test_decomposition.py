"""Block decomposition without MPI: splits, dims, coordinates and error messages."""

import itertools

import pytest

from mpiworkbench.solvers.decomposition import (
    block_range,
    compute_dims,
    decompose,
    split_sizes,
)


@pytest.mark.parametrize("n,parts", [(129, 2), (129, 3), (10, 4), (7, 7), (5, 1), (26 * 5 - 1, 5)])
def test_blocks_tile_the_axis_evenly(n, parts):
    sizes = split_sizes(n, parts)
    assert sum(sizes) == n
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)
    stops = [block_range(n, parts, i) for i in range(parts)]
    assert stops[0][0] == 0 and stops[-1][1] == n
    for (a0, b0), (a1, _), size in zip(stops, stops[1:], sizes):
        assert b0 == a1 and b0 - a0 == size


def test_thesis_mesh_on_two_ranks_is_65_plus_64():
    assert split_sizes(129, 2) == [65, 64]


@pytest.mark.parametrize(
    "nprocs,ndim,expected",
    [(1, 3, (1, 1, 1)), (2, 3, (2, 1, 1)), (3, 3, (3, 1, 1)), (4, 3, (2, 2, 1)), (6, 3, (3, 2, 1)),
     (8, 3, (2, 2, 2)), (12, 3, (3, 2, 2)), (16, 3, (4, 2, 2)), (6, 2, (3, 2)), (7, 2, (7, 1))],
)
def test_compute_dims_is_balanced_and_non_increasing(nprocs, ndim, expected):
    assert compute_dims(nprocs, ndim) == expected


def test_compute_dims_keeps_fixed_entries():
    assert compute_dims(12, 3, [0, 3, 0]) == (2, 3, 2)
    assert compute_dims(4, 3, [1, 1, 4]) == (1, 1, 4)


def test_dims_whose_product_is_not_the_rank_count_name_both():
    with pytest.raises(ValueError, match=r"dims 2x2x1 make 4 blocks but there are 3 rank"):
        compute_dims(3, 3, [2, 2, 1])
    with pytest.raises(ValueError, match=r"does not divide the 3 rank"):
        compute_dims(3, 3, [2, 0, 0])
    with pytest.raises(ValueError, match=r"one entry per mesh axis \(3\)"):
        compute_dims(2, 3, [2, 1])
    with pytest.raises(ValueError, match="positive"):
        compute_dims(2, 3, [-2, -1, 1])


def test_mesh_too_small_for_the_decomposition_names_axis_and_ranks():
    with pytest.raises(
        ValueError, match=r"at least 3 points per axis per rank; got 2 on axis z with 4 ranks"
    ):
        decompose((9, 9, 8), 4, dims=(1, 1, 4), min_points=3)
    with pytest.raises(ValueError, match=r"at least 3 points per axis; got 2 on axis y"):
        decompose((9, 2, 9), 1, min_points=3)


def test_coords_rank_roundtrip_is_row_major():
    d = decompose((10, 11, 12), 12, dims=(3, 2, 2))
    seen = []
    for rank in range(d.size):
        coords = d.coords_of(rank)
        assert d.rank_of(coords) == rank
        seen.append(coords)
    assert seen == list(itertools.product(range(3), range(2), range(2)))


def test_blocks_cover_the_mesh_exactly_once():
    d = decompose((10, 7, 5), 6, dims=(3, 2, 1))
    count = {}
    for _, sl in d.blocks():
        for idx in itertools.product(*(range(s.start, s.stop) for s in sl)):
            count[idx] = count.get(idx, 0) + 1
    assert len(count) == 10 * 7 * 5 and set(count.values()) == {1}
    assert d.cuts(0) == [4, 7] and d.cuts(1) == [4] and d.cuts(2) == []


def test_two_dimensional_blocks_for_cg():
    d = decompose((33, 33), 3)
    assert d.dims == (3, 1)
    assert d.local_shape(d.coords_of(2)) == (11, 33)
