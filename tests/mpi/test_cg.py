"""Distributed CG against a serial CG and scipy, at any number of ranks (run at 1, 2 and 3)
on any communicator (COMM_WORLD, COMM_SELF, a duplicate of the world).

Meshes are chosen so the splits are uneven at 2 and 3 ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from mpi4py import MPI

from mpiworkbench.solvers.cg import poisson
from mpiworkbench.solvers.cg import CGSolver

MESH = 23  # 23 rows: 12+11 on 2 ranks, 8+8+7 on 3


def serial_cg(mesh: int, rhs, tol: float, criterion: str) -> tuple[np.ndarray, int]:
    """Textbook CG on the global matrix, the same stopping rule and start as the solver."""
    a = poisson.global_matrix(mesh)
    b = poisson.global_rhs(mesh, rhs)
    x = b.copy() if criterion == "thesis" else np.zeros_like(b)
    r = b - a @ x
    p = r.copy()
    rho = rho0 = r @ r
    bb = b @ b
    k = 0
    while (rho > tol * rho0) if criterion == "thesis" else (rho > tol**2 * bb):
        v = a @ p
        alpha = rho / (p @ v)
        x += alpha * p
        r -= alpha * v
        rho, rho_old = r @ r, rho
        p = r + (rho / rho_old) * p
        k += 1
    return x, k


def column_dims(comm):
    return (1, comm.size)


PARTITIONS = [("rows", None), ("blocks", "columns")]


@pytest.mark.parametrize("variant", ["classic", "thesis", "fused"])
@pytest.mark.parametrize("criterion", ["thesis", "relative"])
@pytest.mark.parametrize("partition, dims", PARTITIONS)
def test_iterations_and_solution_match_serial_cg(comm, variant, criterion, partition, dims):
    dims = column_dims(comm) if dims == "columns" else None
    solver = CGSolver(MESH, comm=comm, criterion=criterion, partition=partition, dims=dims, variant=variant)
    try:
        res = solver.solve()
        u = solver.gather_solution()
    finally:
        solver.close()
    x_ref, k_ref = serial_cg(MESH, None, 1e-8, criterion)
    assert res["status"] == "converged"
    assert abs(res["iterations"] - k_ref) <= 1, (res["iterations"], k_ref)
    if comm.rank == 0:
        assert u.shape == (MESH, MESH)
        np.testing.assert_allclose(u.ravel(), x_ref, rtol=0, atol=1e-10 * np.abs(x_ref).max())
    else:
        assert u is None


@pytest.mark.parametrize("partition, dims", PARTITIONS)
def test_agrees_with_scipy_cg(comm, partition, dims):
    dims = column_dims(comm) if dims == "columns" else None
    tol = 1e-8
    solver = CGSolver(MESH, comm=comm, tol=tol, criterion="relative", partition=partition, dims=dims)
    res = solver.solve()
    u = solver.gather_solution()
    solver.close()
    a, b = poisson.global_matrix(MESH), poisson.global_rhs(MESH)
    count = [0]
    x_scipy, info = spla.cg(a, b, rtol=tol, atol=0.0, callback=lambda xk: count.__setitem__(0, count[0] + 1))
    assert info == 0
    assert abs(res["iterations"] - count[0]) <= 1
    assert res["residual"] <= tol and res["true_residual"] <= 2 * tol
    if comm.rank == 0:
        # both stop at ||r|| <= tol ||b||: the solutions differ by at most cond(A)*tol relative
        err = np.linalg.norm(u.ravel() - x_scipy) / np.linalg.norm(x_scipy)
        assert err <= tol * 1e-2, err


def test_manufactured_solution_is_reached(comm):
    solver = CGSolver(MESH, comm=comm, tol=1e-12, criterion="relative")
    res = solver.solve()
    solver.close()
    assert res["max_error"] < 1e-13
    exact = poisson.exact_solution(MESH)
    assert res["max_error"] < 1e-10 * exact.max()


def test_blocks_partition_on_a_square_grid_of_ranks(comm):
    dims = (comm.size, 1) if comm.size % 2 else (2, comm.size // 2)
    a = CGSolver(MESH, comm=comm, partition="blocks", dims=dims)
    b = CGSolver(MESH, comm=comm, partition="rows")
    ra, rb = a.solve(), b.solve()
    ua, ub = a.gather_solution(), b.gather_solution()
    a.close(), b.close()
    assert abs(ra["iterations"] - rb["iterations"]) <= 1
    if comm.rank == 0:
        np.testing.assert_allclose(ua, ub, rtol=0, atol=1e-12)


def test_eigenvector_rhs_converges_in_one_iteration(comm):
    solver = CGSolver(MESH, comm=comm, rhs="eigenvector", criterion="relative")
    res = solver.solve()
    solver.close()
    assert res["iterations"] == 1 and res["max_error"] is None


def test_rhs_given_as_array_or_callable_matches_named(comm):
    f = lambda x, y: np.ones_like(x)  # noqa: E731
    b = poisson.global_rhs(MESH, "ones")
    results = []
    for rhs in ("ones", f, b, b.reshape(MESH, MESH)):
        s = CGSolver(MESH, comm=comm, rhs=rhs)
        results.append(s.solve())
        s.close()
    assert len({r["iterations"] for r in results}) == 1
    assert len({r["residual"] for r in results}) == 1


def test_iterate_in_steps_equals_one_solve(comm):
    stepped = CGSolver(MESH, comm=comm)
    states = [stepped.iterate(5) for _ in range(3)]
    assert [s["iterations"] for s in states] == [5, 10, 15]
    stepped.iterate()
    whole = CGSolver(MESH, comm=comm)
    whole.iterate()
    assert stepped.iterations == whole.iterations
    assert stepped.history()["residual"] == whole.history()["residual"]
    hist = stepped.history(start=10)
    assert len(hist["residual"]) == stepped.iterations + 1 - 10
    t = stepped.timings()
    assert set(t) >= {"matvec", "exchange", "allreduce", "vector", "total"}
    assert all(t[k] >= 0 for k in ("matvec", "exchange", "allreduce", "vector"))
    assert t["matvec"] > 0 and t["total"] >= t["matvec"]
    per_rank = stepped.gather_timings()
    if comm.rank == 0:
        assert len(per_rank) == comm.size
    stepped.close(), whole.close()


def test_maxiter_reached_is_a_result_with_a_warning(comm):
    solver = CGSolver(MESH, comm=comm, maxiter=3)
    with pytest.warns(RuntimeWarning, match="CG reached maxiter=3 at mesh=23"):
        state = solver.iterate()
    assert state["status"] == "maxiter" and state["iterations"] == 3
    res = solver.result()
    solver.close()
    assert res["converged"] is False and res["residual"] > 1e-8


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mesh": 0}, "mesh must be an integer of at least 1"),
        ({"mesh": 9, "tol": 0.0}, "tol must be a positive finite number"),
        ({"mesh": 9, "tol": -1e-8}, "tol must be a positive finite number"),
        ({"mesh": 9, "rhs": np.ones(80)}, r"rhs must have mesh² = 81 values"),
        ({"mesh": 9, "criterion": "absolute"}, "criterion must be one of"),
        ({"mesh": 9, "variant": "pipelined"}, "variant must be one of"),
        ({"mesh": 9, "backend": "pypar"}, "backend must be one of"),
    ],
)
def test_bad_input_raises_on_every_rank(comm, kwargs, message):
    kwargs = dict(kwargs)
    mesh = kwargs.pop("mesh")
    with pytest.raises(ValueError, match=message):
        CGSolver(mesh, comm=comm, **kwargs)
    comm.Barrier()  # every rank got here: nobody is left waiting in a collective


def test_bad_input_on_one_rank_only_raises_everywhere(comm):
    # rank-dependent input: only the last rank's rhs has the wrong length
    rhs = np.ones(81 if comm.rank < comm.size - 1 else 80)
    with pytest.raises(ValueError, match="rhs must have mesh"):
        CGSolver(9, comm=comm, rhs=rhs)
    comm.Barrier()


def test_mesh_smaller_than_the_rank_grid(comm):
    if comm.size == 1:
        pytest.skip("needs more ranks than mesh rows")
    with pytest.raises(ValueError, match=f"got mesh={comm.size - 1} split into {comm.size} blocks"):
        CGSolver(comm.size - 1, comm=comm)


@pytest.mark.parametrize("backend", ["mpi4py-obj", "numba-mpi", "c"])
def test_every_backend_gives_the_same_iterates(comm, backend):
    if backend == "numba-mpi" and comm != MPI.COMM_WORLD:
        pytest.skip("the numba-mpi backend runs on COMM_WORLD itself only (numba-mpi has no communicator argument)")
    # the exchange and allreduces move the same numbers whichever backend carries them
    ref = CGSolver(MESH, comm=comm, partition="blocks", dims=column_dims(comm))
    other = CGSolver(MESH, comm=comm, partition="blocks", dims=column_dims(comm), backend=backend)
    r_ref, r_other = ref.solve(), other.solve()
    ref.close(), other.close()
    assert r_other["backend"] == backend
    assert r_other["iterations"] == r_ref["iterations"]
    np.testing.assert_allclose(other.history()["residual"], ref.history()["residual"], rtol=1e-12)
