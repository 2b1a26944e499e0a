"""How code runs on a session's engines: every rank at once, results in rank order, never
frozen by a failed collective (see :mod:`mpiworkbench.client.waiting`)."""

from __future__ import annotations

import uuid
from typing import Any, Callable

from mpiworkbench.client.errors import ExecutionTimeout
from mpiworkbench.client.remote import RemoteObject
from mpiworkbench.client.trace import arm_engines, explain_timeout, submitted
from mpiworkbench.client.waiting import wait_ranks
from mpiworkbench.core import machine, objects


class Execution:
    """Running code on the engines of a started session (mixed into
    :class:`~mpiworkbench.client.session.Session`, which owns ``view``, ``client``, ``ranks``,
    ``timeout``, ``failure_grace`` and ``_world_died``)."""

    def _require_running(self) -> None:
        if self.view is None:
            raise RuntimeError("the workbench is not running; call wb.start() first")
        if self._world_died():
            raise RuntimeError(
                "the MPI world has died (a rank was killed, called MPI_Abort or crashed); "
                "call wb.restart() for a fresh one"
            )

    def run_async(self, func: Callable[..., Any], *args: Any, **kwargs: Any):
        """Submit ``func(*args, **kwargs)`` on every rank without waiting.

        Returns
        -------
        ipyparallel.AsyncResult
            The pending call; finish it with :meth:`gather` (hang-protected).
        """
        self._require_running()
        arm_engines(self)
        return submitted(lambda: self.view.apply_async(func, *args, **kwargs))

    def gather(self, ar, timeout: float | None | str = "default") -> list[Any]:
        """Wait for *ar* (hang-protected) and return its results in rank order.

        Parameters
        ----------
        ar : ipyparallel.AsyncResult
            A call of :meth:`run_async` (or any call on this session's engines).
        timeout : float or None, optional
            Seconds to wait; the session's :attr:`timeout` by default, ``None`` forever.

        Raises
        ------
        RankFailure, ExecutionTimeout
            As :meth:`run`.
        """
        limit = self.timeout if timeout == "default" else timeout
        self.wait_explained(ar, limit)
        return list(ar.get())

    def wait_explained(self, ar, timeout: float | None, raise_failures: bool = True):
        """:func:`~mpiworkbench.client.waiting.wait_ranks`, and on a timeout the hang report:
        where each rank is blocked and the likely cause (:func:`~mpiworkbench.client.trace.explain_timeout`)."""
        try:
            return wait_ranks(ar, self.ranks, timeout, grace=self.failure_grace, raise_failures=raise_failures)
        except ExecutionTimeout as exc:
            raise explain_timeout(self, exc, getattr(ar, "_wb_submitted", None)) from None

    def run(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        """Run ``func(*args, **kwargs)`` on every rank and wait for it.

        Returns
        -------
        list
            Every rank's return value, in rank order.

        Raises
        ------
        RankFailure
            Every rank finished and some raised (a rank-by-rank report).
        ExecutionTimeout
            Ranks still running after :attr:`timeout` (a rank-by-rank report).
        """
        return self.gather(self.run_async(func, *args, **kwargs))

    def execute(self, code: str) -> None:
        """Execute *code* in every engine's namespace (what ``%%px`` does), hang-protected."""
        self._require_running()
        arm_engines(self)
        ar = submitted(lambda: self.view.execute(code, block=False))
        self.wait_explained(ar, self.timeout)

    def interrupt(self, signal: str = "SIGINT") -> None:
        """Send *signal* to every engine (wakes Python code, not a blocked MPI call)."""
        self._require_running()
        self.client.send_signal(signal, targets=list(self.ranks), block=True)

    def pull(self, name: str, rank: int = 0) -> Any:
        """The value of *name* in one rank's namespace (gather to that rank with MPI first)."""
        self._require_running()
        engine = {r: e for e, r in self.ranks.items()}[rank]
        return self.client[engine].pull(name, block=True)

    # ------------------------------------------------------------------ remote objects
    def create(self, factory: str, *args: Any, nranks: int | None = None, **kwargs: Any) -> "RemoteObject":
        """Build ``factory(*args, **kwargs)`` on every engine and return a handle to it.

        Parameters
        ----------
        factory : str
            ``"module:callable"``, imported on the engines, called with the communicator
            (``comm=``) besides *args* and *kwargs*.
        nranks : int, optional
            Build it on a sub-communicator of the first *nranks* ranks only.

        Returns
        -------
        RemoteObject
        """
        self._require_running()
        key = f"obj-{uuid.uuid4().hex[:10]}"
        holds = self.run(objects.create, key, factory, args, kwargs, nranks)
        return RemoteObject(self, key, factory, holds)

    # ------------------------------------------------------------------ facts
    def info(self) -> list[dict[str, Any]]:
        """Per-rank facts: rank, host, pid, thread level (rank order)."""
        return self.run(machine.rank_info)

    def environment(self) -> dict[str, Any]:
        """The engines' environment (MPI library, versions, hosts, cores, backends), from rank 0."""
        from mpiworkbench.backends import environment

        return self.run(environment)[0]

