"""Pictures reduced on the ranks (``mpiworkbench.solvers.picture``): at 1, 2 and 3 ranks the
gathered picture is the serial reduction of the gathered field, with exact extremes, for
meshes that no bin count divides; small meshes come back exact; bad resolutions fail alike
on every rank, naming the value."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.solvers.cg.solver import CGSolver
from mpiworkbench.solvers.decomposition import decompose
from mpiworkbench.solvers.heat import HeatSolver
from mpiworkbench.solvers.picture import gather_picture, picture_shape, reduce_picture
from mpiworkbench.solvers.wave import WaveSolver

BAD = [0, -3, 2.5, True, "512"]


def _same_picture(got, field, resolution):
    """*got* (gathered) against the serial reduction of *field*: bin means equal to rounding
    (a bin straddling blocks adds partial sums in another order), extremes exactly."""
    want = reduce_picture(field, resolution)
    assert got.values.shape == want.values.shape == picture_shape(field.shape, resolution)
    np.testing.assert_allclose(got.values, want.values, rtol=1e-13, atol=1e-15)
    assert (got.vmin, got.vmax) == (float(field.min()), float(field.max())) == (want.vmin, want.vmax)
    assert got.shape == field.shape and got.reduced == (want.values.shape != field.shape)


@pytest.mark.parametrize("shape", [(37, 23), (50, 7), (11, 13, 17)])
@pytest.mark.parametrize("resolution", [1, 5, 9, 12])
def test_any_decomposition_gives_the_serial_picture(comm, shape, resolution):
    field = np.random.default_rng(len(shape) * 100 + resolution).standard_normal(shape)
    layout = decompose(shape, comm.size)
    ranges = [layout.ranges(layout.coords_of(r)) for r in range(comm.size)]
    mine = field[layout.slices(layout.coords_of(comm.rank))]
    got = gather_picture(comm, mine, ranges, shape, resolution)
    if comm.rank == 0:
        _same_picture(got, field, resolution)
    else:
        assert got is None


def test_at_or_below_the_resolution_the_field_comes_exact(comm):
    shape = (19, 14)
    field = np.random.default_rng(1).standard_normal(shape)
    layout = decompose(shape, comm.size)
    ranges = [layout.ranges(layout.coords_of(r)) for r in range(comm.size)]
    mine = field[layout.slices(layout.coords_of(comm.rank))]
    for resolution in (19, 512, None):
        got = gather_picture(comm, mine, ranges, shape, resolution)
        if comm.rank == 0:
            np.testing.assert_array_equal(got.values, field)
            assert not got.reduced and (got.vmin, got.vmax) == (field.min(), field.max())


@pytest.mark.parametrize("resolution", [4, 7, 200])
def test_wave_slice_pictures_are_the_reduced_slices(comm, resolution):
    s = WaveSolver((23, 19, 17), comm=comm)
    s.step(4)
    for axis, index in [("x", 0), ("y", 9), ("z", 16), (0, 22)]:
        got, plane = s.slice_picture(axis, index, resolution), s.gather_slice(axis, index)
        if comm.rank == 0:
            _same_picture(got, plane, resolution)
            if resolution >= 23:  # nothing to average: bit for bit the exact slice
                np.testing.assert_array_equal(got.values, plane)
    s.close()


@pytest.mark.parametrize("partition", ["rows", "blocks"])
def test_cg_solution_pictures_are_the_reduced_solution(comm, partition):
    s = CGSolver(31, comm=comm, partition=partition)
    s.iterate(6)
    for resolution in (6, 10, 31):
        got, u = s.solution_picture(resolution), s.gather_solution()
        if comm.rank == 0:
            _same_picture(got, u, resolution)
    full = s.solution_picture(None)
    if comm.rank == 0:
        np.testing.assert_array_equal(full.values, u)
    s.close()


def test_heat_pictures_are_the_reduced_field(comm):
    if comm.size > 13:
        pytest.skip("more ranks than rows")
    s = HeatSolver((41, 13), comm=comm)
    s.step(25)
    for resolution in (5, 8, 41):
        got, field = s.picture(resolution), s.gather()
        if comm.rank == 0:
            _same_picture(got, field, resolution)
    s.close()


@pytest.mark.parametrize("bad", BAD)
def test_a_bad_resolution_fails_on_every_rank_naming_it(comm, bad):
    w, c, h = WaveSolver(9, comm=comm), CGSolver(9, comm=comm), HeatSolver((9, 6), comm=comm)
    message = rf"resolution must be a positive whole number .* or None for the exact field; got {bad!r}"
    for call in (lambda: w.slice_picture("z", 4, bad), lambda: c.solution_picture(bad), lambda: h.picture(bad)):
        with pytest.raises(ValueError, match=message):
            call()
    assert comm.allreduce(1) == comm.size  # the ranks are still in step
    for s in (w, c, h):
        s.close()
