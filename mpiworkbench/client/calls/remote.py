"""Handles on objects that live on every engine (built by ``Session.create``).

The objects themselves are kept by the engine-side registry :mod:`mpiworkbench.core.objects`;
a handle only names its key and calls through the session, hang-protected.
"""

from __future__ import annotations

from typing import Any

from mpiworkbench.core import objects


class RemoteObject:
    """A handle on an object that lives on every engine (built by :meth:`Session.create <mpiworkbench.client.calls.session.Session.create>`).

    Parameters
    ----------
    wb
        The running session whose engines hold the object.
    key : str
        The object's key in the engine-side registry.
    factory : str
        The ``"module:callable"`` it was built from (for the repr).
    holds : list of bool
        Per rank, whether that rank holds the object.
    """

    def __init__(self, wb: Any, key: str, factory: str, holds: list[bool]):
        self.wb = wb
        self.key = key
        self.factory = factory
        #: Which ranks hold the object (all, unless created with ``nranks``).
        self.holds = holds

    def call_async(self, method: str, *args: Any, **kwargs: Any):
        """Submit ``obj.method(*args, **kwargs)`` on every rank; finish it with ``wb.gather``."""
        return self.wb.run_async(objects.call, self.key, method, args, kwargs)

    def call(self, method: str, *args: Any, **kwargs: Any) -> list[Any]:
        """``obj.method(*args, **kwargs)`` on every rank; results in rank order."""
        return self.wb.gather(self.call_async(method, *args, **kwargs))

    def root(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Like :meth:`call`, returning rank 0's result only."""
        return self.call(method, *args, **kwargs)[0]

    def attr(self, name: str) -> list[Any]:
        """The attribute *name* of the object on every rank, in rank order."""
        return self.wb.run(objects.attribute, self.key, name)

    def delete(self) -> None:
        """Drop the object on the engines (nothing to do when the session has stopped)."""
        if self.wb.view is not None:
            self.wb.run(objects.delete, self.key)

    def __repr__(self) -> str:
        return f"<RemoteObject {self.factory} key={self.key!r} on {sum(map(bool, self.holds))} rank(s)>"
