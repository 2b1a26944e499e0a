"""The runtime: a session over an ipyparallel cluster whose engines are one MPI world, in three
rooms — the cluster's lifecycle (:mod:`~mpiworkbench.client.cluster`: start, attach, profiles,
the controller, the watchdog, cleanup, health), the session's calls
(:mod:`~mpiworkbench.client.calls`: the session, running code in one order with the other clients,
waits, errors, ``%%px``, tracing and debugging from the notebook) and the code that runs inside the
ranks (:mod:`~mpiworkbench.client.ranks`) — beside what all three share: the errors, ipyparallel's
call histories and every private name of upstream packages the runtime reaches
(:mod:`~mpiworkbench.client.upstream`). The feature drivers (:mod:`mpiworkbench.drivers`) and the
widgets build on it; the user-facing :class:`mpiworkbench.Workbench` joins them.

Lazy: importing a module of a room (a rank importing what it runs, the watchdog) does not import
the session and ipyparallel's client; the names below load on first use.
"""

from __future__ import annotations

import importlib

#: The package's face: name → the module that defines it.
FACE = {
    "DEFAULT_TIMEOUT_S": "calls.execution",
    "ExecutionTimeout": "errors",
    "RankFailure": "errors",
    "RankStatus": "errors",
    "RemoteObject": "calls.remote",
    "Session": "calls.session",
    "WorkbenchError": "errors",
}
__all__ = sorted(FACE)


def __getattr__(name: str):
    if name not in FACE:
        raise AttributeError(f"module 'mpiworkbench.client' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mpiworkbench.client.{FACE[name]}"), name)
