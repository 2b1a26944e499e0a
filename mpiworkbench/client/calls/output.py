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


def printed_digest(text: str) -> str:
    """The digest of what a rank printed in one call (16 hex digits of SHA-256): what a saved
    job's run is compared by (:mod:`mpiworkbench.jobs`)."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


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


def _blocks(groups: list[tuple[list[int], str]]) -> list[tuple[list[int], list[str]]]:
    """Blocks of lines with their ranks: each group's text; when every group shares leading or
    trailing lines, those once for all the ranks, and only the lines that differ per group."""
    split = [(ranks, (text[:-1] if text.endswith("\n") else text).split("\n")) for ranks, text in groups]
    if len(split) < 2:
        return split
    shortest = min(len(lines) for _r, lines in split)
    head = 0
    while head < shortest and len({tuple(lines[head:head + 1]) for _r, lines in split}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head and len({lines[len(lines) - 1 - tail] for _r, lines in split}) == 1:
        tail += 1
    everyone = sorted(r for ranks, _l in split for r in ranks)
    first = split[0][1]
    blocks = [(everyone, first[:head])] if head else []
    blocks += [(ranks, lines[head:len(lines) - tail]) for ranks, lines in split if lines[head:len(lines) - tail]]
    if tail:
        blocks.append((everyone, first[len(first) - tail:]))
    return blocks


@dataclass
class GroupedOutput:
    """A cell's output on every rank, grouped; ``str()`` is the bounded view."""

    outputs: list[RankOutput] = field(default_factory=list)

    def lines(self, errors: bool = True) -> list[str]:
        """Every grouped line, unbounded: stdout, then stderr, then ``Out``, then (with *errors*)
        the errors."""
        lines: list[str] = []
        for kind in ("stdout", "stderr"):
            for ranks, block in _blocks(_by_text({o.rank: getattr(o, kind) for o in self.outputs})):
                lines.append(f"[{kind}:{_ranges(ranks)}] {block[0]}")
                lines.extend(block[1:])
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
