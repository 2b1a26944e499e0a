"""The notebook side: a session over an ipyparallel cluster of MPI engines."""

from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus, WorkbenchError
from mpiworkbench.client.session import DEFAULT_TIMEOUT_S, RemoteObject, Workbench
__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ExecutionTimeout",
    "RankFailure",
    "RankStatus",
    "RemoteObject",
    "Workbench",
    "WorkbenchError",
]
