"""A call on the ranks, as the session made it: one object of ours around ipyparallel's
``AsyncResult``, instead of attributes added to it.

:meth:`~mpiworkbench.client.calls.execution.Executor.submit` makes every call the session sends
(``wb.run``, ``%%px``, a pull, a push, a post-mortem) and returns it; ``wb.run_async`` returns the
call of a function on every rank, which ``wb.gather(call)`` waits for (hang-protected) and returns
in rank order.
"""

from __future__ import annotations

import threading
from typing import Any

from mpiworkbench.client.history import drop


class Call:
    """One call on the ranks.

    Attributes
    ----------
    ar : ipyparallel.AsyncResult
        What carries it: for a call relayed by rank 0, rank 0's one reply (every rank's outcome in
        it); else one part per engine.
    label : str
        What it is, for the clients waiting for the world's turn (``"wb.run: step"``).
    submitted : float
        When it was sent (``time.monotonic()``, the interposer's clock, taken just before): a hang
        report weighs only what the ranks did since.
    relayed : bool
        Whether rank 0's relay handed it to the other ranks (one reply for all of them).
    view : ipyparallel view or None
        The view a relayed call went through (its history drops the call too).
    entry : Entry or None
        What the session's journal keeps of it (:mod:`~mpiworkbench.client.calls.journal`), if anything.
    announces_start : bool
        Whether each engine says when it begins the call: a cell sent as ``%%px`` sends it (not
        silent: its ``execute_input`` comes in first). Set by who sent it.
    """

    entry = None
    announces_start = False

    def __init__(self, ar: Any, label: str, submitted: float, relayed: bool = False, view: Any = None,
                 turns: Any = None, histories: tuple = ()) -> None:
        self.ar, self.label, self.submitted, self.relayed, self.view = ar, label, submitted, relayed, view
        #: The world's turn it holds (:class:`~mpiworkbench.client.calls.turns.Turns`), if any,
        #: and the ipyparallel histories it leaves once finished.
        self._turns, self._histories = turns, histories
        self._once = threading.Lock()
        self._released = False
        ar.add_done_callback(lambda _f: self.finish())

    def finish(self) -> None:
        """Once the call has finished on every rank: give its turn back and drop it from
        ipyparallel's histories (:func:`~mpiworkbench.client.history.drop`), once, by whichever
        comes first — ipyparallel's I/O thread completing it, or a wait seeing it done. Both
        return only once that is done: the waiting thread must not return from a call while the
        other is still at it (``wb.state`` read right after would say "busy", a history would
        still hold it)."""
        if self._released or not self.ar.done():
            return
        with self._once:
            if not self._released:
                if self._turns is not None:
                    self._turns.release(id(self))
                drop(self.ar, self._histories)
                self._released = True

    def mark_blocked(self, report: str) -> None:
        """The call outlived its timeout and still runs: the other clients stop waiting for it
        and are told *report* (cleared when it finishes)."""
        if self._turns is not None and not self.ar.done():
            self._turns.mark_blocked(report, id(self))

    # ------------------------------------------------------------ a future, as ipyparallel's
    def done(self) -> bool:
        return self.ar.done()

    def ready(self) -> bool:
        return self.ar.ready()

    def wait(self, timeout: float | None = -1) -> bool:
        return self.ar.wait(timeout)

    @property
    def msg_ids(self) -> list[str]:
        return self.ar.msg_ids

    def __repr__(self) -> str:
        state = "done" if self.ar.done() else "running"
        return f"<Call {self.label!r} {state}{' relayed by rank 0' if self.relayed else ''}>"
