"""mpiworkbench: learn, measure and teach MPI from Python.

The package is a house whose imports only go down (``tests/unit/test_architecture.py``
checks it)::

    cli, workbench        the ``mpiworkbench`` command; :class:`Workbench` (session + panels)
    widgets, plot         notebook panels and matplotlib figures
    drivers               one driver per feature: bench, speedup, the solvers' handles, syntax
    client                the runtime: the ipyparallel session, its world, magics, profiles
    speedup               speedup experiments: plan, run on 1 … n ranks, analyse
    bench, solvers,       micro-benchmarks; the wave, CG, heat and pi solvers;
    syntax                historic MPI module syntax side by side
    backends              one communication interface over mpi4py, numba-mpi, C, …
    core                  MPI shim, C builds, launching, the machine snapshot

Everything below ``client`` is engine-side: it takes a communicator and runs the same
in ipyparallel engines, under ``mpiexec`` from the CLI and in a batch job, and never
imports ipyparallel or IPython. Importing this package needs neither MPI nor
ipyparallel; both load on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Workbench", "ExecutionTimeout", "RankFailure", "__version__"]


def __getattr__(name: str):
    # Lazy: the notebook kernel pays for ipyparallel only when it asks for a session,
    # and engine-side code never pays for it at all.
    if name == "Workbench":
        from mpiworkbench.workbench import Workbench  # lazy: the package's face must not import ipyparallel

        return Workbench
    if name in ("ExecutionTimeout", "RankFailure"):
        from mpiworkbench.client import errors  # lazy: likewise (the client imports ipyparallel)

        return getattr(errors, name)
    raise AttributeError(f"module 'mpiworkbench' has no attribute {name!r}")
