"""The distributed wave solver: bitwise equal across decompositions, accurate, clear errors.

Runs unchanged at 1, 2 and 3 ranks, on COMM_WORLD, COMM_SELF and a duplicate of the
world (the ``comm`` fixture). The serial reference is the same solver on ``COMM_SELF``
(one block) computed on rank 0 of the communicator under test.
"""

import math

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.solvers.wave import WaveSolver, stable_dt

COMM = MPI.COMM_WORLD
MESH = (11, 10, 9)  # non-cubic; uneven splits at 2 and 3 ranks
STEPS = 7


def _serial_reference(comm, mesh=MESH, steps=STEPS, **kw):
    if comm.rank != 0:
        return None
    s = WaveSolver(mesh, comm=MPI.COMM_SELF, **kw)
    s.step(steps)
    field = s.gather()
    s.close()
    return field


def _run(comm, mesh=MESH, steps=STEPS, **kw):
    s = WaveSolver(mesh, comm=comm, **kw)
    s.step(steps)
    field = s.gather()
    s.close()
    return field


@pytest.mark.parametrize(
    "kernel,exchange",
    [("numpy", "sendrecv"), ("numpy", "nonblocking"), ("numpy", "packed"), ("c", "sendrecv"),
     ("c", "nonblocking"), ("numba", "sendrecv"), ("numba", "numba-mpi"), ("c", "backend:c"),
     ("numpy", "backend:mpi4py-buf"), ("numpy", "backend:mpi4py-obj"), ("numba", "backend:numba-mpi")],
)
def test_field_is_bitwise_equal_to_serial_for_every_kernel_and_exchange(comm, kernel, exchange):
    if "numba-mpi" in exchange and comm.size != MPI.COMM_WORLD.size:
        pytest.skip("numba-mpi talks only to COMM_WORLD: it cannot run on a smaller communicator")
    reference = _serial_reference(comm, kernel="numpy")
    field = _run(comm, kernel=kernel, exchange=exchange)
    if comm.rank == 0:
        np.testing.assert_array_equal(field, reference)
    else:
        assert field is None


@pytest.mark.parametrize("dims", [None, "x", "y", "z"])
def test_field_is_bitwise_equal_for_every_direction_of_the_split(comm, dims):
    given = None if dims is None else [comm.size if a == dims else 1 for a in "xyz"]
    reference = _serial_reference(comm, kernel="c")
    field = _run(comm, kernel="c", dims=given)
    if comm.rank == 0:
        np.testing.assert_array_equal(field, reference)


def test_missed_exchange_corrupts_the_field_only_when_there_are_neighbours(comm):
    reference = _serial_reference(comm)
    field = _run(comm, exchange="none")
    if comm.rank == 0:
        if comm.size == 1:
            np.testing.assert_array_equal(field, reference)
        else:
            assert np.max(np.abs(field - reference)) > 1e-3


def test_cfl_one_on_a_cubic_mesh_is_exact_up_to_rounding(comm):
    s = WaveSolver(comm=comm, mesh=17, kernel="numba")
    s.step(56)  # t ≈ 2.02, more than one period
    assert s.error() < 1e-12
    s.close()


@pytest.mark.parametrize("mesh,dims", [((11, 10, 9), None), (17, None), ((9, 12, 10), "x"), ((12, 9, 10), "z")])
@pytest.mark.parametrize("slab_bytes", [1, 300, None])
def test_error_equals_the_whole_block_expression_bit_for_bit(comm, mesh, dims, slab_bytes):
    from mpiworkbench.solvers.wave.solver import error_slab_shape

    given = None if dims is None else [comm.size if a == dims else 1 for a in "xyz"]
    s = WaveSolver(comm=comm, mesh=mesh, dims=given, cfl=0.7, kernel="c")
    if slab_bytes is not None:  # many small slabs (the default fits a small block in one)
        s._error_scratch = np.empty(error_slab_shape(s._phi.shape, slab_bytes))
    for steps in (0, 1, 6):
        s.step(steps)
        factor = math.cos(math.sqrt(3.0) * math.pi * s.c * s.t)
        local = float(np.max(np.abs(s.owned() - s._phi * factor)))  # the plain expression
        assert s.error() == comm.allreduce(local, op=MPI.MAX)
    s.close()


def _dispersion_error(n, cfl, steps):
    """max |u_h − u| predicted by the scheme's dispersion relation (cubic mesh)."""
    h = 1.0 / (n - 1)
    dt = cfl * stable_dt((n, n, n))
    courant2 = 3 * (dt / h) ** 2 * math.sin(math.pi * h / 2) ** 2
    omega_h = 2.0 / dt * math.asin(math.sqrt(courant2))
    t = steps * dt
    return 2.0 * abs(math.cos(math.sqrt(3) * math.pi * t) - math.cos(omega_h * t))


def test_error_at_half_cfl_matches_the_dispersion_relation_and_converges_at_second_order(comm):
    errors = []
    for level, n in enumerate((9, 17, 33)):
        steps = 14 * 2**level  # same final time on every mesh
        s = WaveSolver(comm=comm, mesh=n, cfl=0.5, kernel="c")
        s.step(steps)
        err = s.error()
        s.close()
        assert err == pytest.approx(_dispersion_error(n, 0.5, steps), rel=1e-6)
        errors.append(err)
    ratios = [a / b for a, b in zip(errors, errors[1:])]
    assert all(3.5 < r < 4.5 for r in ratios), ratios


def test_energy_is_conserved(comm):
    s = WaveSolver(comm=comm, mesh=(9, 10, 11), cfl=0.9)
    s.step(1)
    e0 = s.energy()
    s.step(30)
    assert s.energy() == pytest.approx(e0, rel=1e-12)
    assert e0 > 0
    s.close()


def test_slices_agree_with_the_gathered_field(comm):
    s = WaveSolver(comm=comm, mesh=MESH, kernel="numpy")
    s.step(3)
    whole = s.gather()
    for axis, index in [(0, 0), ("y", 4), ("z", 7), (0, 10)]:
        plane = s.gather_slice(axis, index)
        if comm.rank == 0:
            a = {"x": 0, "y": 1, "z": 2}.get(axis, axis)
            np.testing.assert_array_equal(plane, np.take(whole, index, axis=a))
        else:
            assert plane is None
    s.close()


def test_timings_split_compute_and_exchange_per_rank(comm):
    s = WaveSolver(comm=comm, mesh=MESH, exchange="nonblocking")
    s.step(4)
    t = s.timings()
    assert t["rank"] == comm.rank and t["steps"] == 4
    assert t["compute_s"] > 0 and t["exchange_s"] >= 0
    assert s.info()["dims"] == s.dims and math.prod(s.dims) == comm.size
    s.close()


def test_bad_input_fails_on_every_rank_with_the_value(comm):
    n = comm.size
    with pytest.raises(ValueError, match="mesh must"):
        WaveSolver(comm=comm, mesh=(9, 9, 3 * n - 1), dims=(1, 1, n))
    with pytest.raises(ValueError, match=rf"make {n + 1} blocks but there are {n} rank"):
        WaveSolver(comm=comm, mesh=9, dims=(n + 1, 1, 1))
    with pytest.raises(ValueError, match=r"dt 0\.2 is above the stability limit 0\.0721"):
        WaveSolver(comm=comm, mesh=9, dt=0.2)
    with pytest.raises(ValueError, match=r"cfl .* must be in \(0, 1\]; got 1\.5"):
        WaveSolver(comm=comm, mesh=9, cfl=1.5)
    with pytest.raises(ValueError, match="kernel must be one of numpy, numba, c; got 'fortran'"):
        WaveSolver(comm=comm, mesh=9, kernel="fortran")
    s = WaveSolver(comm=comm, mesh=9)
    with pytest.raises(ValueError, match="steps must be a non-negative integer; got -1"):
        s.step(-1)
    with pytest.raises(ValueError, match=r"slice index along z must be an integer in 0\.\.8; got 9"):
        s.gather_slice("z", 9)
    assert s.step(0) == {"steps": 0, "t": 0.0}
    s.close()


def test_numba_mpi_refuses_a_reordered_communicator():
    if COMM.size == 1:
        pytest.skip("one rank: every communicator has the world's order")
    reversed_comm = COMM.Split(0, COMM.size - COMM.rank)
    with pytest.raises(ValueError, match="numba-mpi' only works on all of MPI.COMM_WORLD"):
        WaveSolver(9, comm=reversed_comm, kernel="numba", exchange="numba-mpi")
    reversed_comm.Free()
