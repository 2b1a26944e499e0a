"""The backend registry without an MPI job: names, lazy loading, friendly errors."""

from __future__ import annotations

import pytest

from mpiworkbench import backends
from mpiworkbench.backends import BackendUnavailableError, NotSupportedError
def test_names_c_first_and_historic_listed_apart():
    names = backends.backend_names()
    assert names[0] == "c" and {"mpi4py-obj", "mpi4py-buf", "numba-mpi", "mpi4jax"} <= set(names)
    assert backends.historic_names() == ["pypar", "pyMPI", "Scientific.MPI", "MYMPI", "boostmpi"]


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="unknown backend 'mpi4py'.*mpi4py-obj"):
        backends.get_backend("mpi4py")
    with pytest.raises(ValueError, match="historic"):
        backends.get_backend("pypar")


def test_mpi4jax_is_reported_unavailable_not_raised_at_import():
    assert not backends.is_available("mpi4jax")
    with pytest.raises(BackendUnavailableError, match="mpi4jax"):
        backends.get_backend("mpi4jax")
    caps = backends.capabilities(["mpi4jax", "mpi4py-buf"])
    assert caps["mpi4jax"]["available"] is False and "mpi4jax" in caps["mpi4jax"]["reason"]
    assert caps["mpi4py-buf"]["ops"] == {op: None for op in backends.OPERATIONS}


def test_not_supported_error_message():
    err = NotSupportedError("numba-mpi", "no MPI_Alltoall")
    assert str(err) == "not supported by numba-mpi: no MPI_Alltoall"
    assert isinstance(err, NotImplementedError)


def test_c_backend_builds_and_reports_its_limits():
    cls = backends.backend_class("c")
    assert cls.unsupported == {} and "contiguous" in cls.limits[0]
