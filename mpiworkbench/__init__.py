"""mpiworkbench: learn, measure and teach MPI from Python.

The package has two sides (see ``DESIGN`` in the README):

* an engine-side core (:mod:`mpiworkbench.core.mpi`, :mod:`mpiworkbench.backends`,
  :mod:`mpiworkbench.bench`, :mod:`mpiworkbench.solvers`) that takes a communicator and
  runs the same in ipyparallel engines, under ``mpiexec`` from the CLI, and on a batch
  system. It never imports ipyparallel or IPython.
* a notebook side (:class:`Workbench`, widgets, plots) that drives the core over an
  ipyparallel cluster whose engines are the ranks of one MPI world.

Importing this package needs neither MPI nor ipyparallel; both load on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Workbench", "ExecutionTimeout", "RankFailure", "__version__"]


def __getattr__(name: str):
    # Lazy: the notebook kernel pays for ipyparallel only when it asks for a session,
    # and engine-side code never pays for it at all.
    if name in ("Workbench", "ExecutionTimeout", "RankFailure"):
        from mpiworkbench import client
        return getattr(client, name)
    raise AttributeError(f"module 'mpiworkbench' has no attribute {name!r}")
