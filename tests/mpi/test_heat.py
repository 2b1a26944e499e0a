"""2-D heat diffusion: every halo exchange gives the serial field bit for bit; the naive
persistent exchange (requests bound to a swapped buffer) does not. On any communicator."""

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.solvers.heat import EXCHANGES, HeatSolver, row_range, steady_state

SHAPE = (11, 6)  # 11 rows: uneven splits on 2 and 3 ranks


def serial_field(steps, shape=SHAPE):
    solver = HeatSolver(shape, comm=MPI.COMM_SELF)
    solver.step(steps)
    field = solver.gather()
    solver.close()
    return field


@pytest.mark.parametrize("exchange", [e for e in EXCHANGES if e != "persistent-naive"])
def test_field_equals_serial_bit_for_bit(comm, exchange):
    solver = HeatSolver(SHAPE, comm=comm, exchange=exchange)
    solver.step(25)
    field = solver.gather()
    solver.close()
    if comm.rank == 0:
        assert np.array_equal(field, serial_field(25))
    else:
        assert field is None


def test_naive_persistent_requests_break_after_the_buffer_swap(comm):
    solver = HeatSolver(SHAPE, comm=comm, exchange="persistent-naive")
    solver.step(25)
    field = solver.gather()
    solver.close()
    if comm.rank == 0:
        same = np.array_equal(field, serial_field(25))
        # one rank has no neighbours, so nothing can go stale; with more the field is wrong
        assert same == (comm.size == 1)


def test_converges_to_the_linear_steady_state(comm):
    solver = HeatSolver((9, 5), comm=comm, tol=1e-12, exchange="nonblocking")
    out = solver.run(max_steps=5000)
    assert out["converged"]
    assert solver.error() < 1e-9
    solver.close()


def test_rows_cover_the_grid_unevenly(comm):
    ranges = [row_range(11, r, comm.size) for r in range(comm.size)]
    assert ranges[0][0] == 0 and ranges[-1][1] == 11
    assert sum(b - a for a, b in ranges) == 11


def test_steady_state_is_linear_between_boundaries():
    s = steady_state((5, 3), top=1.0, bottom=0.0)
    assert np.allclose(s[:, 0], [1.0, 0.75, 0.5, 0.25, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 0.3}, "alpha must be in"),
        ({"exchange": "carrier-pigeon"}, "exchange must be one of"),
        ({"shape": (2, 5)}, "at least 3 x 3 points"),
        ({"tol": 0.0}, "tol must be a positive number"),
    ],
)
def test_bad_input_raises_on_every_rank(comm, kwargs, message):
    args = {"shape": SHAPE, **kwargs}
    with pytest.raises(ValueError, match=message):
        HeatSolver(args.pop("shape"), comm=comm, **args)


def test_too_few_rows_for_the_ranks(comm):
    if comm.size < 4:
        with pytest.raises(ValueError, match="every rank needs at least one row: got M=3 rows on 4 ranks"):
            from mpiworkbench.solvers.heat import _validate
            _validate((3, 3), 4, 0.25, "sendrecv", 1e-4)
    else:
        with pytest.raises(ValueError, match="every rank needs at least one row"):
            HeatSolver((3, 3), comm=comm)
