"""Every (operation, backend) of the unified interface, at any number of ranks.

Run at 1, 2 and 3 ranks::

    MPIEXEC_TIMEOUT=300 .venv/bin/mpiexec -n 3 .venv/bin/python -m mpi4py -m pytest tests/mpi/test_backends.py -q
"""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.backends import NotSupportedError, backend_class, get_backend, implemented_names
from mpiworkbench.core import implementations

COMM = MPI.COMM_WORLD
#: Why mpi4jax cannot run under Open MPI (the tier runs under it too: `make test-mpi`).
MPI4JAX_UNDER_OPEN_MPI = ("Open MPI: mpi4jax's XLA bridge is compiled against the venv's MPICH (integer "
                          "handles) and refuses Open MPI's pointer handles (BackendUnavailableError)")
_NO_MPI4JAX = pytest.mark.skipif(implementations.current().name == "openmpi", reason=MPI4JAX_UNDER_OPEN_MPI)
#: The runnable backends: the four every environment has, and mpi4jax where it is installed
#: (`make test` installs it; tests/unit/test_backends_registry.py checks it loads when present).
NAMES = ["mpi4py-obj", "mpi4py-buf", "c", "numba-mpi"] + [
    pytest.param(n, marks=_NO_MPI4JAX) for n in implemented_names() if n == "mpi4jax"]
DTYPES = [np.float64, np.int32, np.complex128]


@pytest.fixture(params=NAMES)
def be(request):
    return get_backend(request.param, COMM)


def lacks(be, op: str) -> str | None:
    """Why *be* cannot do *op* at all (None when it can)."""
    return type(be).unsupported.get(op)


def values(rank: int, n: int, dtype) -> np.ndarray:
    x = np.arange(n) + 10 * rank + 1
    if np.dtype(dtype).kind == "c":
        return (x + 1j * x).astype(dtype)
    return x.astype(dtype)


def test_rank_size_wtime(be):
    assert (be.rank, be.size) == (COMM.rank, COMM.size)
    t0 = be.wtime()
    be.barrier()
    assert be.wtime() >= t0


@pytest.mark.parametrize("dtype", DTYPES)
def test_send_recv_pairs_with_proc_null(be, dtype):
    # Pairs (0,1), (2,3), …; an unpaired last rank talks to PROC_NULL.
    partner = COMM.rank ^ 1
    if partner >= COMM.size:
        partner = be.PROC_NULL
    out = np.full(5, -7, dtype)
    if COMM.rank % 2 == 0:
        be.send(values(COMM.rank, 5, dtype), partner, tag=3)
        got = be.recv(out, source=partner, tag=4)
    else:
        got = be.recv(out, source=partner, tag=3)
        be.send(values(COMM.rank, 5, dtype), partner, tag=4)
    assert got is out
    if partner == be.PROC_NULL:
        assert (out == -7).all()  # a receive from PROC_NULL leaves the buffer untouched
    else:
        np.testing.assert_array_equal(out, values(partner, 5, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sendrecv_chain_with_proc_null(be, dtype):
    if lacks(be, "sendrecv"):
        pytest.skip(lacks(be, "sendrecv"))
    right = COMM.rank + 1 if COMM.rank + 1 < COMM.size else be.PROC_NULL
    left = COMM.rank - 1 if COMM.rank > 0 else be.PROC_NULL
    out = np.full(4, -1, dtype)
    be.sendrecv(values(COMM.rank, 4, dtype), right, out=out, source=left, sendtag=5, recvtag=5)
    expected = np.full(4, -1, dtype) if left == be.PROC_NULL else values(left, 4, dtype)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_isend_irecv_ring_waitall(be, dtype):
    if lacks(be, "isend"):
        pytest.skip(lacks(be, "isend"))
    right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
    out = np.zeros(6, dtype)
    reqs = [be.irecv(out, source=left, tag=7), be.isend(values(COMM.rank, 6, dtype), right, tag=7)]
    results = be.waitall(reqs)
    np.testing.assert_array_equal(out, values(left, 6, dtype))
    assert results[0] is out and results[1] is None


def test_isend_irecv_wait_one_by_one(be):
    if lacks(be, "isend"):
        pytest.skip(lacks(be, "isend"))
    right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
    out = np.zeros(3)
    r = be.irecv(out, source=left)
    s = be.isend(np.full(3, float(COMM.rank)), right)
    assert be.wait(r) is out
    assert be.wait(s) is None
    assert (out == left).all()


def test_irecv_from_proc_null(be):
    if lacks(be, "irecv"):
        with pytest.raises(NotSupportedError, match="non-blocking"):
            be.irecv(np.zeros(3), source=be.PROC_NULL)
        return
    out = np.full(3, 9.0)
    assert be.wait(be.irecv(out, source=be.PROC_NULL)) is out
    assert (out == 9.0).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_bcast_from_last_rank(be, dtype):
    root = COMM.size - 1
    data = values(root, 7, dtype) if COMM.rank == root else np.zeros(7, dtype)
    got = be.bcast(data, root=root)
    np.testing.assert_array_equal(got, values(root, 7, dtype))
    np.testing.assert_array_equal(data, values(root, 7, dtype))  # filled in place


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_reduce_allreduce(be, dtype, op):
    local = values(COMM.rank, 4, dtype)
    everyone = np.array([values(r, 4, dtype) for r in range(COMM.size)])
    expected = {"sum": everyone.sum(0), "prod": everyone.prod(0), "min": everyone.min(0), "max": everyone.max(0)}[op]
    expected = expected.astype(dtype)
    if op == "prod" and type(be).name == "numba-mpi":
        with pytest.raises(NotSupportedError, match="numba-mpi"):
            be.allreduce(local, op=op)
        return
    root = COMM.size - 1
    out = np.zeros(4, dtype) if COMM.rank == root else None
    got = be.reduce(local, op=op, root=root, out=out)
    if COMM.rank == root:
        np.testing.assert_array_equal(got, expected)
    else:
        assert got is None
    np.testing.assert_array_equal(be.allreduce(local, op=op, out=np.zeros(4, dtype)), expected)


def test_allreduce_complex_sum(be):
    local = values(COMM.rank, 3, np.complex128)
    expected = sum(values(r, 3, np.complex128) for r in range(COMM.size))
    np.testing.assert_array_equal(be.allreduce(local, out=np.zeros(3, np.complex128)), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_allgather(be, dtype):
    expected = np.array([values(r, 3, dtype) for r in range(COMM.size)])
    out = np.zeros((COMM.size, 3), dtype) if COMM.rank == 0 else None
    got = be.gather(values(COMM.rank, 3, dtype), root=0, out=out)
    if COMM.rank == 0:
        np.testing.assert_array_equal(got, expected)
    else:
        assert got is None
    got = be.allgather(values(COMM.rank, 3, dtype), out=np.zeros((COMM.size, 3), dtype))
    np.testing.assert_array_equal(got, expected)


def uneven_counts() -> list[int]:
    return [r % 3 + 1 for r in range(COMM.size)]  # 1, 2, 3, 1, …


def test_gather_allgather_uneven_counts(be):
    counts = uneven_counts()
    mine = values(COMM.rank, counts[COMM.rank], np.float64)
    expected = np.concatenate([values(r, c, np.float64) for r, c in enumerate(counts)])
    if lacks(be, "counts"):
        with pytest.raises(NotSupportedError):
            be.allgather(mine, out=np.zeros(sum(counts)), counts=counts)
        return
    got = be.allgather(mine, out=np.zeros(sum(counts)), counts=counts)
    np.testing.assert_array_equal(got, expected)
    root = COMM.size - 1
    got = be.gather(mine, root=root, out=np.zeros(sum(counts)) if COMM.rank == root else None, counts=counts)
    if COMM.rank == root:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter(be, dtype):
    root = COMM.size - 1
    data = np.array([values(r, 2, dtype) for r in range(COMM.size)]) if COMM.rank == root else None
    out = np.zeros(2, dtype)
    got = be.scatter(data, root=root, out=out)
    np.testing.assert_array_equal(got, values(COMM.rank, 2, dtype))


def test_scatter_uneven_counts(be):
    counts = uneven_counts()
    data = np.arange(float(sum(counts))) if COMM.rank == 0 else None
    out = np.zeros(counts[COMM.rank])
    if lacks(be, "counts"):
        with pytest.raises(NotSupportedError):
            be.scatter(data, root=0, out=out, counts=counts)
        return
    be.scatter(data, root=0, out=out, counts=counts)
    start = sum(counts[: COMM.rank])
    np.testing.assert_array_equal(out, np.arange(start, start + counts[COMM.rank], dtype=float))


@pytest.mark.parametrize("dtype", DTYPES)
def test_alltoall(be, dtype):
    if lacks(be, "alltoall"):
        with pytest.raises(NotSupportedError, match=type(be).name):
            be.alltoall(np.zeros((COMM.size, 2), dtype), out=np.zeros((COMM.size, 2), dtype))
        return
    # Block j of rank r is 100*r + j; afterwards block j of rank r holds 100*j + r.
    data = np.array([[100 * COMM.rank + j] * 2 for j in range(COMM.size)]).astype(dtype)
    got = be.alltoall(data, out=np.zeros((COMM.size, 2), dtype))
    expected = np.array([[100 * j + COMM.rank] * 2 for j in range(COMM.size)]).astype(dtype)
    np.testing.assert_array_equal(got, expected)


def test_noncontiguous_send_is_handled_or_refused(be):
    grid = np.arange(12.0).reshape(3, 4)
    column = grid[:, 1]  # strided view
    out = np.zeros(3)
    name = type(be).name
    if name in ("mpi4py-buf", "c"):
        with pytest.raises(ValueError, match="not contiguous"):
            be.sendrecv(column, COMM.rank, out=out, source=COMM.rank)
        return
    be.sendrecv(column, COMM.rank, out=out, source=COMM.rank)  # obj pickles, numba-mpi copies
    np.testing.assert_array_equal(out, [1.0, 5.0, 9.0])


def test_noncontiguous_receive_is_handled_or_refused(be):
    grid = np.zeros((3, 4))
    name = type(be).name
    if name in ("mpi4py-obj", "mpi4jax"):  # a pickled object / mpi4jax's new array, copied into the view
        be.sendrecv(np.ones(3), COMM.rank, out=grid[:, 2], source=COMM.rank)
        assert grid[:, 2].tolist() == [1.0, 1.0, 1.0] and grid.sum() == 3.0
        return
    errors = {"mpi4py-buf": ValueError, "c": ValueError, "numba-mpi": NotSupportedError}
    with pytest.raises(errors[name], match="contiguous"):
        be.sendrecv(np.ones(3), COMM.rank, out=grid[:, 2], source=COMM.rank)


def test_objects(be):
    if not type(be).objects:
        pytest.skip(f"{type(be).name} moves buffers, not Python objects")
    got = be.bcast({"step": 3, "name": "wave"} if COMM.rank == 0 else None, root=0)
    assert got == {"step": 3, "name": "wave"}
    right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
    assert be.sendrecv(("hello", COMM.rank), right, source=left) == ("hello", left)
    assert be.allreduce(COMM.rank, op="sum") == COMM.size * (COMM.size - 1) // 2
    assert be.allgather(str(COMM.rank)) == [str(r) for r in range(COMM.size)]


def test_sub_communicator(be):
    sub = COMM.Split(COMM.rank % 2, COMM.rank)
    try:
        if type(be).name == "numba-mpi":
            with pytest.raises(NotSupportedError, match="COMM_WORLD"):
                get_backend("numba-mpi", sub)
            return
        b = get_backend(type(be).name, sub)
        assert (b.rank, b.size) == (sub.rank, sub.size)
        np.testing.assert_array_equal(b.allreduce(np.array([1.0]), out=np.zeros(1)), [sub.size])
    finally:
        sub.Free()


def test_unsupported_ops_say_why(be):
    for op, why in type(be).unsupported.items():
        assert why, f"{type(be).name}: {op} unsupported without a reason"


@pytest.mark.parametrize("name", NAMES)
def test_backend_class_metadata(name):
    cls = backend_class(name)
    assert cls.name == name and cls.summary
