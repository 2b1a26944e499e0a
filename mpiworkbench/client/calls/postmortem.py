"""What ``wb.post_mortem(rank)`` returns: one rank's last failure, frame by frame
(:func:`mpiworkbench.core.postmortem.last_failure` reads it on the rank)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PostMortem:
    """The last exception raised on one rank, with the frames from the user's code to the raise.

    Attributes
    ----------
    rank : int
        The MPI rank it was raised on.
    exception, message : str
        The exception's type name and text (``""`` for both when the rank has not failed).
    frames : list of dict
        Innermost last: ``file``, ``line``, ``function``, ``source`` (the line's text) and
        ``locals`` (name → bounded ``repr``; in a cell, the names the failing statement uses).
    """

    rank: int
    exception: str = ""
    message: str = ""
    frames: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether the rank has raised at all."""
        return bool(self.exception)

    @property
    def locals(self) -> dict[str, str]:
        """The local variables of the frame that raised (bounded ``repr`` strings)."""
        return dict(self.frames[-1]["locals"]) if self.frames else {}

    def __str__(self) -> str:
        if not self.failed:
            return f"rank {self.rank} has raised nothing (or its last failure was replaced by a later call's)"
        lines = [f"rank {self.rank}: {self.exception}: {self.message}"]
        for frame in self.frames:
            lines.append(f"  {frame['file']}:{frame['line']} in {frame['function']}")
            if frame["source"]:
                lines.append(f"    {frame['source']}")
            lines.extend(f"      {name} = {value}" for name, value in frame["locals"].items())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(str(self))}</pre>"
