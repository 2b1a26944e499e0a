"""The thesis's own listings, runnable: hello world (Ch. 3), the inner product (§2.4),
the wave solver's ghost exchange (§6.1.3) and CG's global dot product (§6.2.2).

Each module reproduces a printed listing line by line, in Python 3 syntax, on the
historic-module emulations (:mod:`mpiworkbench.syntax.historic`) or on mpi4py itself.
Where the printed code cannot run as printed, the file says so at that line (a typo in
the thesis, a syntax error, an API that changed since mpi4py 1.x). Every module has
``main()`` (collective) and a ``check(result, rank, size) -> bool`` of its result.
The hello worlds are the ``hello`` snippets of :mod:`mpiworkbench.syntax.lessons`.

Deliberate repetition: the listings of one algorithm in different modules share most of
their lines (set-up, loop, checks), because that is what the thesis printed and what a
learner compares side by side; factoring the shared lines out would hide the very
differences these files exist to show. The snippets under ``syntax/snippets`` are alike
for the same reason.
"""

from __future__ import annotations

import importlib
from typing import Any

from mpiworkbench.core import mpi
from mpiworkbench.syntax.historic import bind

#: name → (thesis section, module that the listing uses)
LISTINGS: dict[str, tuple[str, str]] = {
    "inner_product_pypar": ("§2.4.1", "pypar"),
    "wave_exchange_pypar": ("§6.1.3", "pypar"),
    "wave_exchange_mpi4py": ("§6.1.3", "mpi4py"),
    "wave_exchange_mympi": ("§6.1.3", "MYMPI"),
    "wave_exchange_pympi": ("§6.1.3", "pyMPI"),
    "wave_exchange_scientific": ("§6.1.3", "Scientific.MPI"),
    "wave_exchange_boostmpi": ("§6.1.3", "boostmpi"),
    "cg_allreduce_pypar": ("§6.2.2", "pypar"),
    "cg_allreduce_mpi4py": ("§6.2.2", "mpi4py"),
    "cg_allreduce_mympi": ("§6.2.2", "MYMPI"),
    "cg_allreduce_pympi": ("§6.2.2", "pyMPI"),
    "cg_allreduce_scientific": ("§6.2.2", "Scientific.MPI"),
    "cg_allreduce_boostmpi": ("§6.2.2", "boostmpi"),
}


def module(name: str):
    if name not in LISTINGS:
        raise ValueError(f"unknown listing {name!r}; choose one of {list(LISTINGS)}")
    return importlib.import_module(f"{__name__}.{name}")


def source(name: str) -> str:
    """The listing file's text (what a notebook shows is what runs)."""
    import inspect

    return inspect.getsource(module(name))


def run(name: str, comm=None) -> tuple[Any, bool]:
    """Collective: run listing *name* on *comm*; ``(this rank's result, its check)``."""
    comm = mpi.resolve_comm(comm)
    mod = module(name)
    with bind(comm):
        result = mod.main()
    return result, bool(mod.check(result, comm.Get_rank(), comm.Get_size()))
