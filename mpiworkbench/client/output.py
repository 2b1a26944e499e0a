"""``%%px`` output a person can read at 64 ranks: grouped, bounded, the raw view on demand.

ipyparallel shows a cell's output engine by engine: 64 ranks printing the same line are 64
blocks. :func:`grouped` merges ranks whose output is identical under one label with their rank
ranges (``[stdout:0-63] hello``), shows output that differs rank by rank, and groups errors by
type: one full traceback per type and the ranks that raised it. What it shows is capped
(:data:`SHOW_LINES`); ``wb.last_output.show_all()`` prints everything, ``wb.last_output.raw()``
rank by rank. Labels name MPI ranks, not engine ids.

Pure functions of per-rank outputs: nothing here talks to the engines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mpiworkbench.client.errors import RankStatus, error_lines, ranks_text

#: Lines of grouped output shown before the rest is cut (``show_all()`` shows them all).
SHOW_LINES = 200
#: Characters of one line shown before it is cut (a rank printing a megabyte on one line).
SHOW_LINE_CHARS = 2_000


@dataclass
class RankOutput:
    """What one rank's part of a cell produced."""

    rank: int
    stdout: str = ""
    stderr: str = ""
    result: str = ""  # the cell's value as text (``Out[…]``), "" when none
    status: RankStatus | None = None  # set when the rank raised


def _ranges(ranks: list[int]) -> str:
    """``0-63``, ``0, 2, 5-7``: the label part of :func:`~mpiworkbench.client.errors.ranks_text`."""
    return ranks_text(ranks).split(" ", 1)[1]


def _by_text(texts: dict[int, str]) -> list[tuple[list[int], str]]:
    """Ranks grouped by identical non-empty text, in order of each group's first rank."""
    groups: dict[str, list[int]] = {}
    for rank in sorted(texts):
        if texts[rank]:
            groups.setdefault(texts[rank], []).append(rank)
    return [(ranks, text) for text, ranks in groups.items()]


@dataclass
class GroupedOutput:
    """A cell's output on every rank, grouped; ``str()`` is the bounded view."""

    outputs: list[RankOutput] = field(default_factory=list)

    def lines(self, errors: bool = True) -> list[str]:
        """Every grouped line, unbounded: stdout, then stderr, then ``Out``, then (with *errors*)
        the errors."""
        lines: list[str] = []
        for kind in ("stdout", "stderr"):
            for ranks, text in _by_text({o.rank: getattr(o, kind) for o in self.outputs}):
                label = f"[{kind}:{_ranges(ranks)}] "
                body = text[:-1] if text.endswith("\n") else text
                first, *rest = body.split("\n")
                lines.append(label + first)
                lines.extend(rest)
        for ranks, text in _by_text({o.rank: o.result for o in self.outputs}):
            lines.append(f"Out[{_ranges(ranks)}]: {text}")
        if errors:
            lines.extend(error_lines([o.status for o in self.outputs if o.status is not None]))
        return lines

    def text(self, limit: int | None = SHOW_LINES, errors: bool = True) -> str:
        """The grouped output, at most *limit* lines (``None``: all), long lines cut; *errors*:
        with the errors (``%%px`` raises them instead, as a :class:`RankFailure`)."""
        lines = self.lines(errors)
        shown = lines if limit is None else lines[:limit]
        out = [line if limit is None or len(line) <= SHOW_LINE_CHARS
               else line[:SHOW_LINE_CHARS] + f" … ({len(line) - SHOW_LINE_CHARS:,} more characters)"
               for line in shown]
        cut = len(lines) - len(shown)
        if cut or any(a is not b for a, b in zip(shown, out)):
            out.append(f"… output capped{f' ({cut:,} more lines)' if cut else ''}: "
                       "wb.last_output.show_all() shows everything, wb.last_output.raw() rank by rank")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.text()

    def show_all(self) -> None:
        """Print every grouped line, uncapped."""
        print(self.text(limit=None))

    def raw(self) -> str:
        """Rank by rank, as ipyparallel shows it (but labelled with ranks)."""
        parts = []
        for o in sorted(self.outputs, key=lambda o: o.rank):
            for kind in ("stdout", "stderr"):
                if getattr(o, kind):
                    parts.append(f"[{kind}:{o.rank}] {getattr(o, kind).rstrip()}")
            if o.result:
                parts.append(f"Out[{o.rank}]: {o.result}")
            if o.status is not None:
                parts.extend([f"[error:{o.rank}]", *(o.status.traceback or [o.status.error])])
        return "\n".join(parts)
