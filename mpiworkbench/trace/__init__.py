"""See every message: a PMPI interposer that records each rank's MPI calls, and what a hang
report reads from it.

Engine-side like :mod:`mpiworkbench.core` (no ipyparallel, no IPython): :mod:`.library` builds
and finds the interposer, :mod:`.recorder` switches recording on and gathers a
:class:`~.model.Trace` to rank 0, :mod:`.hang` reads a blocked rank's in-flight record and
Python stack from outside and names the likely cause.
"""

from mpiworkbench.trace.model import Trace

__all__ = ["Trace"]
