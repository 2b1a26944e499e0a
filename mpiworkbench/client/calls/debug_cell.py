"""``%%px --debug [RANKS] [--break LINES]``: the options, and the debugging session a cell runs in
(:class:`~mpiworkbench.client.calls.debugging.Debugging`, its breakpoints set in the cell and
released when the cell ends, however it ends)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Iterator

from mpiworkbench.client.calls import lab_advice
from mpiworkbench.client.calls.debugging import Debugging


def debug_options(line: str) -> tuple[str, tuple[list[int] | None, list[int]] | None]:
    """Split ``--debug [RANKS] [--break LINES]`` off a ``%%px`` line: the rest of the line, and
    (ranks, lines) or ``None`` without ``--debug``. RANKS and LINES: ``1``, ``0,2``, ``0-2``."""
    words = line.split()
    if "--debug" not in words:
        if "--break" in words:
            raise ValueError("%%px --break needs --debug: write %%px --debug --break 4")
        return line, None
    ranks, lines, rest = None, [], []
    i = 0
    while i < len(words):
        word = words[i]
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "--debug" and _NUMBERS.fullmatch(following):
            ranks, i = _numbers(following), i + 2
        elif word == "--break":
            if not _NUMBERS.fullmatch(following):
                raise ValueError(f"%%px --break needs the cell's line numbers (1 is its first line): "
                                 f"got {following!r}; write e.g. --break 4 or --break 4,7")
            lines, i = _numbers(following), i + 2
        elif word == "--debug":
            i += 1
        else:
            rest.append(word)
            i += 1
    return " ".join(rest), (ranks, lines)


_NUMBERS = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")


def _numbers(text: str) -> list[int]:
    found = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        found += range(int(first), int(last or first) + 1)
    return sorted(set(found))


def first_code_line(code: str) -> int:
    """The 1-based line of *code*'s first statement (where ``%%px --debug`` stops by default)."""
    for number, text in enumerate(code.splitlines(), 1):
        if text.strip() and not text.strip().startswith("#"):
            return number
    raise ValueError("%%px --debug: the cell has no code to stop in")


@contextlib.contextmanager
def debugging_cell(wb, code: str, ranks: list[int] | None, lines: list[int]) -> Iterator[Debugging]:
    """What ``%%px --debug`` runs its cell in: breakpoints at *lines* of the cell (its first
    statement by default) on *ranks* (all by default), released when the cell ends — however
    it ends, an interrupt included."""
    lines = lines or [first_code_line(code)]
    with wb.debug(ranks) as dbg:
        dbg.break_in_cell(code, *lines)
        where = (f"debugging: ranks {', '.join(map(str, dbg.ranks))} stop at cell line{'s' if len(lines) > 1 else ''} "
                 f"{', '.join(map(str, lines))}")
        # a lab without the lab part lists no rank kernels: then what adds it, and what works meanwhile
        missing = lab_advice.advice({rank: Path(d.client.connection_file) for rank, d in dbg.ranks.items()},
                                    debugging=True)
        if missing:
            print(f"{where}; interrupting this cell continues every rank.\n{missing}")
        else:
            print(f"{where}. In the MPI world sidebar, Debug on a rank puts JupyterLab's Debugger there; "
                  "interrupting this cell continues every rank.")
        yield dbg
