"""The runtime: a session over an ipyparallel cluster whose engines are one MPI world — starting
or attaching, running code in one order with the other clients, restarts, the watchdog, hang
reports, ``%%px``. The feature drivers (:mod:`mpiworkbench.drivers`) and the widgets build on it;
the user-facing :class:`mpiworkbench.Workbench` (in :mod:`mpiworkbench.workbench`) joins them."""

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
