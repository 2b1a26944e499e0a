"""The backend registry without an MPI job: names, lazy loading, friendly errors."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from mpiworkbench import backends
from mpiworkbench.backends import BackendUnavailableError, NotSupportedError

#: Whether the optional mpi4jax package is installed here (`make test` installs it).
MPI4JAX_INSTALLED = importlib.util.find_spec("mpi4jax") is not None


def run_python(code: str) -> list[str]:
    """What a fresh interpreter running *code* prints, split on whitespace."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()
def test_names_c_first_and_historic_listed_apart():
    names = backends.backend_names()
    assert names[0] == "c" and {"mpi4py-obj", "mpi4py-buf", "numba-mpi", "mpi4jax"} <= set(names)
    assert backends.historic_names() == ["pypar", "pyMPI", "Scientific.MPI", "MYMPI", "boostmpi"]


def test_unknown_backend_names_the_choices():
    with pytest.raises(ValueError, match="unknown backend 'mpi4py'.*mpi4py-obj"):
        backends.get_backend("mpi4py")
    with pytest.raises(ValueError, match="historic"):
        backends.get_backend("pypar")


def test_mpi4jax_without_its_package_is_not_offered_and_says_how_to_install():
    # sys.modules[name] = None: both find_spec and import then see the package as absent
    code = ("import sys; sys.modules['mpi4jax'] = None; import mpiworkbench.backends as b; "
            "caps = b.capabilities(['mpi4jax'])['mpi4jax']; "
            "print('mpi4jax' in b.implemented_names(), b.is_available('mpi4jax'), caps['available'], "
            "'make install-mpi4jax' in caps['reason'], 'mpi4py.MPI' in sys.modules, 'numba' in sys.modules)")
    assert run_python(code) == ["False", "False", "False", "True", "False", "False"]


@pytest.mark.skipif(not MPI4JAX_INSTALLED, reason="mpi4jax is not installed here (make install-mpi4jax)")
def test_mpi4jax_installed_is_a_backend_with_its_gaps_stated():
    assert "mpi4jax" in backends.implemented_names() and backends.is_available("mpi4jax")
    caps = backends.capabilities(["mpi4jax", "mpi4py-buf"])
    assert caps["mpi4jax"]["available"] is True
    assert {op for op, why in caps["mpi4jax"]["ops"].items() if why} == {"isend", "irecv"}
    assert "non-blocking" in caps["mpi4jax"]["ops"]["isend"]
    assert caps["mpi4py-buf"]["ops"] == {op: None for op in backends.OPERATIONS}
    with pytest.raises(NotSupportedError, match="isend/irecv"):
        backends.timed_loop("mpi4jax", "bw", None)  # refused before any MPI call


def test_not_supported_error_message():
    err = NotSupportedError("numba-mpi", "no MPI_Alltoall")
    assert str(err) == "not supported by numba-mpi: no MPI_Alltoall"
    assert isinstance(err, NotImplementedError)


def test_c_backend_builds_and_reports_its_limits():
    cls = backends.backend_class("c")
    assert cls.unsupported == {} and "contiguous" in cls.limits[0]


def test_one_list_of_names_serves_every_caller():
    names = backends.backend_names()
    implemented = backends.implemented_names()
    assert implemented == [n for n in names if n != "mpi4jax" or MPI4JAX_INSTALLED] and implemented[0] == "c"
    assert backends.implemented_names(any_communicator=True) == ["c", "mpi4py-obj", "mpi4py-buf"] + (
        ["mpi4jax"] if MPI4JAX_INSTALLED else [])
    assert backends.bench_names() == names + [f"api:{n}" for n in names]
    from mpiworkbench.syntax.historic import HISTORIC_MODULES
    from mpiworkbench.syntax.lessons import COLUMNS
    assert list(HISTORIC_MODULES) == backends.historic_names()
    assert list(COLUMNS) == implemented + backends.historic_names()


def test_every_implemented_backend_owns_its_loops_behind_one_entry_point():
    import inspect
    base = inspect.signature(backends.Backend.make_loop)
    for name in backends.implemented_names():
        if not backends.is_available(name):
            continue
        cls = backends.backend_class(name)
        own = cls.make_loop.__func__  # its own or its package's (both mpi4py flavours share one)
        assert own is not backends.Backend.make_loop.__func__, f"{name} has no loops of its own"
        assert own.__module__.startswith(cls.__module__.rsplit(".", 1)[0]), f"{name}'s loops live elsewhere"
        assert inspect.signature(cls.make_loop) == base, name


def test_timed_loop_of_an_unavailable_or_unknown_backend_says_why():
    code = ("import sys; sys.modules['mpi4jax'] = None; import mpiworkbench.backends as b\n"
            "for name in ('mpi4jax', 'api:mpi4jax'):\n"
            "    try:\n        b.timed_loop(name, 'pingpong', None)\n"
            "    except b.BackendUnavailableError as exc:\n        print('mpi4jax' in str(exc))")
    assert run_python(code) == ["True", "True"]
    with pytest.raises(ValueError, match="unknown backend 'pypar'.*historic"):
        backends.timed_loop("pypar", "pingpong", None)


def test_backends_import_neither_mpi4py_nor_numba():
    code = ("import sys, mpiworkbench.backends as b; b.implemented_names(); b.bench_names(); "
            "print('mpi4py.MPI' in sys.modules, 'numba' in sys.modules, 'jax' in sys.modules)")
    assert run_python(code) == ["False", "False", "False"]
