"""The historic-module emulations and the thesis listings that run on them (1, 2, 3 ranks)."""

from __future__ import annotations

import numpy as np
import pytest
from mpi4py import MPI

from mpiworkbench.syntax import listings
from mpiworkbench.syntax.historic import bind, boostmpi, mympi, pympi, pypar, scientific_mpi
COMM = MPI.COMM_WORLD


@pytest.mark.parametrize("name", list(listings.LISTINGS))
def test_thesis_listing_runs_and_checks(name):
    result, ok = listings.run(name, COMM)
    assert all(COMM.allgather(ok)), (name, COMM.rank, result)


def test_listings_run_on_a_duplicate_communicator():
    dup = COMM.Dup()
    try:
        for name in ("wave_exchange_pypar", "cg_allreduce_boostmpi", "wave_exchange_mpi4py"):
            assert listings.run(name, dup)[1]
    finally:
        dup.Free()


def test_mympi_receive_from_proc_null_gives_zeros():
    # Thesis §6.1.3: MYMPI had no working MPI_PROC_NULL; the ghost plane silently became 0.
    from mpiworkbench.syntax.listings import wave_exchange_mympi
    with bind(COMM):
        ghost = wave_exchange_mympi.proc_null_pitfall()
    assert (ghost == 0).all()


def test_pypar_collectives_take_arrays_only():
    with bind(COMM), pytest.raises(TypeError, match="numpy arrays only"):
        pypar.reduce(1.0, pypar.SUM, 0)


def test_pypar_receive_with_status_and_vanilla_objects():
    right, left = (COMM.rank + 1) % COMM.size, (COMM.rank - 1) % COMM.size
    with bind(COMM):
        req = COMM.isend({"from": COMM.rank}, right, tag=pypar.default_tag)
        value, status = pypar.receive(left, return_status=True)
        req.wait()
    assert value == {"from": left} and status.source == left and status.tag == pypar.default_tag


def test_pympi_and_boostmpi_value_return_model():
    with bind(COMM):
        assert pympi.allreduce(COMM.rank, pympi.SUM) == COMM.size * (COMM.size - 1) // 2
        assert pympi.allreduce(np.array([COMM.rank]), pympi.MAX)[0] == COMM.size - 1
        assert boostmpi.all_reduce(boostmpi.world, [COMM.rank], lambda x, y: x + y) == list(range(COMM.size))
        assert pympi.rank == COMM.rank and pympi.size == COMM.size


def test_scientific_receive_tuple_and_share():
    with bind(COMM):
        comm = scientific_mpi.world.duplicate()
        right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
        req = comm.nonblockingSend(np.full(2, float(comm.rank)), right, 7)
        data, source, tag, count = comm.receive("d", left, 7)
        req.wait()
        assert (data == left).all() and (source, tag, count) == (left, 7, 2)
        table = np.zeros(comm.size)
        comm.share(np.array([float(comm.rank)]), table)
        assert table.tolist() == list(map(float, range(comm.size)))


def test_mympi_counts_and_types():
    with bind(COMM):
        comm = mympi.MPI_COMM_WORLD
        # every rank passes its buffer to mpi_reduce, so every rank refuses the bad count
        with pytest.raises(ValueError, match="count 5 is larger"):
            mympi.mpi_reduce(np.zeros(3), 5, mympi.MPI_DOUBLE, mympi.MPI_SUM, 0, comm)
        got = mympi.mpi_bcast(np.arange(3) if mympi.mpi_comm_rank(comm) == 0 else None, 3, mympi.MPI_INT, 0, comm)
        assert got.dtype == np.int32 and got.tolist() == [0, 1, 2]
