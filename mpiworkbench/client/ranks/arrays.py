"""On the ranks: data to and from every rank with one transfer through the controller: the value goes to rank 0
once, and MPI spreads it (:mod:`mpiworkbench.core.transfer`); rows come back gathered on rank 0,
which answers once. ipyparallel's ``DirectView.push`` sends the value to each engine in turn
through the controller: *n* copies leave the notebook.

Used as ``wb.push(name, value)``, ``wb.scatter(name, array)`` and ``wb.collect(name)``
(:class:`~mpiworkbench.client.calls.execution.Executor`).
"""

from __future__ import annotations

from typing import Any

from mpiworkbench.core import mpi, transfer

#: The engine-namespace name under which rank 0 holds a value between its transfer and the spread.
STAGING = "_mpiworkbench_staged"


def _namespace() -> dict:
    from IPython import get_ipython  # lazy: only engines run this

    return get_ipython().user_ns


def stage(value: Any) -> None:
    """On every rank: rank 0 holds *value* under :data:`STAGING` for :func:`spread` (what the
    notebook's one transfer to rank 0 does; a saved job runs this instead)."""
    if mpi.world().Get_rank() == 0:
        _namespace()[STAGING] = value


def spread(name: str, how: str) -> tuple:
    """On every rank: take what rank 0 holds under :data:`STAGING` and bind *name* to it —
    the whole value (*how* ``"bcast"``) or this rank's rows (``"scatter"``); returns the shape
    (or type name) bound here."""
    namespace, comm = _namespace(), mpi.world()
    staged = namespace.pop(STAGING, None) if comm.rank == 0 else None
    value = transfer.bcast_value(staged, comm) if how == "bcast" else transfer.scatter_rows(staged, comm)
    namespace[name] = value
    return getattr(value, "shape", type(value).__name__)


def collect_rows(name: str) -> Any:
    """On every rank: every rank's *name* joined by rows on rank 0 (None elsewhere)."""
    import numpy as np  # (numpy is an engine dependency; the kernel never runs this)

    return transfer.gather_rows(np.asarray(_namespace()[name]), mpi.world())

