"""What every notebook handle on an engine-side solver shares: build it, lock it, delete it."""

from __future__ import annotations

import threading
from typing import Any, Callable


class SolverHandle:
    """A solver living on every engine of *wb*; subclasses set :attr:`factory` and :meth:`reset`.

    Calls into the solver hold :attr:`_lock`, so a panel's background thread and the
    notebook never interleave their requests.

    Parameters
    ----------
    wb
        The running session whose engines hold the solver.
    panel : callable, optional
        ``panel(handle)`` builds the live panel :meth:`widget` shows (an object with a
        ``widget`` attribute). The client never imports widgets: the
        :class:`~mpiworkbench.Workbench` that creates the handle passes its panel class.
    **options
        Keyword arguments of the engine-side solver.
    """

    factory: str = ""

    def __init__(self, wb, panel: Callable[["SolverHandle"], Any] | None = None, **options: Any):
        self.wb = wb
        self.panel = panel
        self.options = options
        self._obj = None
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def widget(self):
        """The live panel over this handle (step, play, the gathered field, timings)."""
        if self.panel is None:
            raise RuntimeError(
                f"{type(self).__name__} was created without a panel; create it with wb.wave(...) / "
                "wb.cg(...) on a mpiworkbench.Workbench to get one"
            )
        return self.panel(self).widget

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
