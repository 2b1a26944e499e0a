"""What every notebook handle on an engine-side solver shares: build it, lock it, delete it."""

from __future__ import annotations

import threading
from typing import Any


class SolverHandle:
    """A solver living on every engine of *wb*; subclasses set :attr:`factory` and :meth:`reset`.

    Calls into the solver hold :attr:`_lock`, so a panel's background thread and the
    notebook never interleave their requests.
    """

    factory: str = ""

    def __init__(self, wb, **options: Any):
        self.wb = wb
        self.options = options
        self._obj = None
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def _create(self):
        """A fresh solver on the engines (the previous one deleted), same options."""
        self.close()
        self._obj = self.wb.create(self.factory, **self.options)
        return self._obj

    def close(self) -> None:
        """Delete the solver on the engines (which calls its ``close()``)."""
        if self._obj is not None:
            self._obj.delete()
            self._obj = None
