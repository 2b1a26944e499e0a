"""The serial side of reduced pictures: bins by global index, bin means, exact extremes,
the exact field at or below the resolution, clear errors for bad resolutions; the CG
handle's exact picture and the live solution's colour scale from exact extremes."""

from __future__ import annotations

import numpy as np
import pytest

from mpiworkbench.solvers.cg import poisson
from mpiworkbench.solvers.picture import check_resolution, picture_shape, reduce_picture


def _by_hand(field, out):
    """Bin means by the definition: point i of an axis of n in bin floor(i * out / n)."""
    m, n = field.shape
    sums, counts = np.zeros(out), np.zeros(out)
    for i in range(m):
        for j in range(n):
            b = (i * out[0] // m, j * out[1] // n)
            sums[b] += field[i, j]
            counts[b] += 1
    return sums / counts


@pytest.mark.parametrize("shape,resolution", [((10, 7), 3), ((17, 17), 5), ((9, 30), 8), ((5, 4), 1)])
def test_bin_means_by_global_index(shape, resolution):
    field = np.random.default_rng(0).standard_normal(shape)
    p = reduce_picture(field, resolution)
    out = picture_shape(shape, resolution)
    assert out == tuple(min(n, resolution) for n in shape)
    np.testing.assert_allclose(p.values, _by_hand(field, out), rtol=1e-13)
    assert (p.vmin, p.vmax) == (field.min(), field.max())  # the extremes, not the means'
    assert p.reduced and p.nbytes == np.prod(out) * 8


def test_a_mesh_at_or_below_the_resolution_is_the_field_itself():
    field = np.random.default_rng(2).standard_normal((12, 9))
    for resolution in (12, 13, 512, None):
        p = reduce_picture(field, resolution)
        np.testing.assert_array_equal(p.values, field)
        assert not p.reduced and p.shape == (12, 9)


def test_one_axis_reduced_the_other_exact():
    field = np.arange(40.0).reshape(20, 2)
    p = reduce_picture(field, 4)
    assert p.values.shape == (4, 2)
    np.testing.assert_array_equal(p.values[:, 0], [4.0, 14.0, 24.0, 34.0])


@pytest.mark.parametrize("bad", [0, -1, 3.0, True, "256", [512]])
def test_bad_resolutions_say_what_to_pass(bad):
    with pytest.raises(ValueError, match="resolution must be a positive whole number of points per side") as error:
        check_resolution(bad)
    assert f"or None for the exact field; got {bad!r}" in str(error.value)
    assert check_resolution(np.int64(7)) == 7 and check_resolution(None) is None


class _Handle:
    """What CGHandle.exact_picture needs of a handle."""

    def __init__(self, mesh):
        self.mesh, self.manufactured, self.options = mesh, True, {}


def test_the_cg_exact_picture_is_the_reduced_exact_solution():
    from mpiworkbench.drivers.cg import CGHandle

    h = _Handle(101)
    exact = poisson.exact_solution(101)
    np.testing.assert_allclose(CGHandle.exact_picture(h, (20, 20)), reduce_picture(exact, 20).values, rtol=1e-12)
    np.testing.assert_array_equal(CGHandle.exact_picture(h, (101, 101)), exact)  # unreduced: as before


def test_a_bad_resolution_fails_in_the_notebook_before_any_engine_call():
    from mpiworkbench.drivers.solver_handle import SolverHandle

    handle = SolverHandle.__new__(SolverHandle)
    handle._submit = lambda *calls: pytest.fail("no engine task for a bad resolution")
    with pytest.raises(ValueError, match="got -5"):
        handle.submit_frame(3, -5)


def test_the_live_solution_scale_follows_the_exact_extremes():
    from mpiworkbench.plot.cg import LiveSolution

    u = np.full((8, 8), 0.5)
    live = LiveSolution(u, None, [(0, 30, 0, 30)], mesh=30)
    live.update(u, extremes=(0.0, 3.0))  # the bin means stay at 0.5: the scale must reach 3
    assert live.fields[0].images[0].get_clim() == (0.0, 5.0)
    live.update(u)
    assert live.fields[0].images[0].get_clim() == (0.0, 0.5)
    assert 50 < live.pixels(live.fields[0]) < 600
