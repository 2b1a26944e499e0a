"""Wave kernels and set-up without MPI: same bits from every kernel, boxes tile the block."""

import itertools
import math

import numpy as np
import pytest

from mpiworkbench.solvers.wave import kernels as wave_kernels
from mpiworkbench.solvers.wave.problem import exact_solution, parse_mesh, stable_dt
def _fields(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape), rng.standard_normal(shape)


COEFFS = (0.11, 0.13, 0.07, 2 * (1 - 0.11 - 0.13 - 0.07))


@pytest.mark.parametrize("kernel", ["numba", "c"])
def test_compiled_kernels_give_the_numpy_bits(kernel):
    shape = (9, 7, 12)
    u, uo = _fields(shape)
    box = wave_kernels.interior_box(shape)
    ref = np.zeros(shape)
    wave_kernels.make_update("numpy", shape, COEFFS)(ref, u, uo, box)
    out = np.zeros(shape)
    wave_kernels.make_update(kernel, shape, COEFFS)(out, u, uo, box)
    np.testing.assert_array_equal(out, ref)


def test_numpy_kernel_matches_the_formula_and_slabs_do_not_matter():
    shape = (8, 6, 5)
    u, uo = _fields(shape, 1)
    cx2, cy2, cz2, center = COEFFS
    c = (slice(1, -1),) * 3
    expected = (
        cx2 * (u[:-2, 1:-1, 1:-1] + u[2:, 1:-1, 1:-1])
        + cy2 * (u[1:-1, :-2, 1:-1] + u[1:-1, 2:, 1:-1])
        + cz2 * (u[1:-1, 1:-1, :-2] + u[1:-1, 1:-1, 2:])
        + center * u[c]
        - uo[c]
    )
    for slab_bytes in (1, 10_000, 1 << 20):
        out = np.zeros(shape)
        wave_kernels.NumpyUpdate(shape, COEFFS, slab_bytes=slab_bytes)(out, u, uo, wave_kernels.interior_box(shape))
        np.testing.assert_array_equal(out[c], expected)
        assert not out[0].any() and not out[:, -1].any()


@pytest.mark.parametrize("shape", [(3, 3, 3), (4, 3, 5), (7, 8, 6), (5, 4, 3)])
def test_core_and_shell_cover_the_owned_points_once(shape):
    core, shell = wave_kernels.core_and_shell(shape)
    count = np.zeros(shape, dtype=int)
    for (a, b), (c, d), (e, f) in [core, *shell]:
        count[a:b, c:d, e:f] += 1
    inner = (slice(1, -1),) * 3
    assert (count[inner] == 1).all() and count.sum() == count[inner].sum()
    (a, b), (c, d), (e, f) = core
    assert a >= 2 and b <= shape[0] - 2 and c >= 2 and d <= shape[1] - 2  # core needs no ghosts


def test_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="kernel must be one of numpy, numba, c; got 'cuda'"):
        wave_kernels.make_update("cuda", (5, 5, 5), COEFFS)


def test_mesh_parsing_and_errors():
    assert parse_mesh(65) == (65, 65, 65)
    assert parse_mesh("65,33,17") == (65, 33, 17)
    assert parse_mesh([9, 10, 11]) == (9, 10, 11)
    with pytest.raises(ValueError, match=r"NX,NY,NZ; got 2 numbers \(9, 9\)"):
        parse_mesh("9,9")
    with pytest.raises(ValueError, match="at least 3 points per axis .* got 2 on axis y"):
        parse_mesh((9, 2, 9))
    with pytest.raises(ValueError, match="integers"):
        parse_mesh("9,a,9")


def test_stable_dt_reproduces_the_thesis_steps():
    # Table 6.1: 0.004510 at 129^3 and 0.002255 at 257^3 (the limit, rounded down)
    assert stable_dt((129,) * 3) == pytest.approx(0.0078125 / np.sqrt(3))
    assert round(stable_dt((129,) * 3) - 5e-7, 6) == 0.004510
    assert round(stable_dt((257,) * 3) - 5e-7, 6) == 0.002255
    assert int(np.ceil(2 / stable_dt((129,) * 3))) == 444
    assert stable_dt((129, 65, 33), c=2.0) == pytest.approx(0.5 / np.sqrt(128**2 + 64**2 + 32**2))


def test_exact_solution_satisfies_the_initial_and_boundary_conditions():
    x = np.linspace(0, 1, 5)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    np.testing.assert_allclose(exact_solution(X, Y, Z, 0.0), 2 * np.cos(np.pi * X) * np.cos(np.pi * Y) * np.cos(np.pi * Z))
    period = 2 / np.sqrt(3)
    np.testing.assert_allclose(exact_solution(X, Y, Z, period), exact_solution(X, Y, Z, 0.0), atol=1e-12)
    for combo in itertools.product([0.0, 1.0], repeat=1):
        d = 1e-6
        fd = (exact_solution(combo[0] + (d if combo[0] == 0 else -d), 0.3, 0.4, 0.2) - exact_solution(combo[0], 0.3, 0.4, 0.2)) / d
        assert abs(fd) < 1e-4  # du/dn = 0 on x = 0 and x = 1


@pytest.mark.parametrize("kernel", ["numpy", "numba", "c"])
def test_core_and_shell_update_equals_the_whole_update(kernel):
    shape = (9, 8, 10)
    u, uo = _fields(shape, 2)
    update = wave_kernels.make_update(kernel, shape, COEFFS)
    whole = np.zeros(shape)
    update(whole, u, uo, wave_kernels.interior_box(shape))
    pieces = np.zeros(shape)
    core, shell = wave_kernels.core_and_shell(shape)
    for box in [core, *shell]:
        update(pieces, u, uo, box)
    np.testing.assert_array_equal(pieces, whole)


@pytest.mark.parametrize("shape", [(3, 3, 3), (9, 7, 12), (5, 40, 33), (17, 16, 15)])
@pytest.mark.parametrize("slab_bytes", [1, 100, 1000, 20_000, 1 << 20])
def test_slabbed_error_pass_gives_the_whole_block_expressions_bits(shape, slab_bytes):
    from mpiworkbench.solvers.wave.solver import error_slab_shape, max_abs_difference

    rng = np.random.default_rng(3)
    ghosted = rng.standard_normal(tuple(n + 2 for n in shape))
    u = ghosted[1:-1, 1:-1, 1:-1]  # the solver's owned view: not contiguous
    phi = rng.standard_normal(shape)
    scratch = np.empty(error_slab_shape(shape, slab_bytes))
    assert scratch.nbytes <= max(slab_bytes, shape[2] * 8)  # one row at the least
    for factor in (1.0, -0.3712, math.cos(math.sqrt(3.0) * math.pi * 0.123), 0.0):
        expected = float(np.max(np.abs(u - phi * factor)))
        assert max_abs_difference(u, phi, factor, scratch) == expected  # exact, not approx


def test_slabbed_error_pass_keeps_a_nan():
    from mpiworkbench.solvers.wave.solver import error_slab_shape, max_abs_difference

    u = np.zeros((6, 5, 4))
    u[4, 2, 1] = np.nan
    assert math.isnan(max_abs_difference(u, np.ones(u.shape), 0.5, np.empty(error_slab_shape(u.shape, 64))))
