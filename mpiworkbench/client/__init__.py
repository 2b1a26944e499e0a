"""The client side: a session over an ipyparallel cluster of MPI engines, and one driver per
feature (bench, speedup, wave, cg, syntax). It never imports the widgets; the user-facing
:class:`mpiworkbench.Workbench` (in :mod:`mpiworkbench.workbench`) joins the two."""

from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus, WorkbenchError
from mpiworkbench.client.remote import RemoteObject
from mpiworkbench.client.execution import DEFAULT_TIMEOUT_S
from mpiworkbench.client.session import Session

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ExecutionTimeout",
    "RankFailure",
    "RankStatus",
    "RemoteObject",
    "Session",
    "WorkbenchError",
]
