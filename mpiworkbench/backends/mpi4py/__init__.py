"""``mpi4py-obj`` (:mod:`.obj`) and ``mpi4py-buf`` (:mod:`.buf`): two flavours of one module.

What the two flavours share is here: the timed loops' entry point (both run
:func:`.loops.python_loop`, told their flavour) and the lookup of a reduction operator by
name. This face imports no mpi4py.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mpiworkbench.backends.base import Backend, Loop
from mpiworkbench.backends.mpi4py import loops

__all__ = ["Mpi4pyBackend"]


class Mpi4pyBackend(Backend):
    """What ``mpi4py-obj`` and ``mpi4py-buf`` have in common.

    A subclass sets ``flavour`` (``"obj"`` or ``"buf"``) and fills ``self._ops``
    (operator name → what its mpi4py methods take) in ``__init__``.
    """

    flavour: ClassVar[str] = "?"
    _ops: dict[str, Any]

    @classmethod
    def make_loop(cls, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
        """mpi4py's own methods in a Python loop: see :meth:`Backend.make_loop`."""
        return loops.python_loop(cls.flavour, benchmark, comm, mode, window)

    def _op(self, op: str):
        try:
            return self._ops[op]
        except KeyError:
            raise ValueError(f"unknown reduction op {op!r}; use one of {sorted(self._ops)}") from None
