"""The job directory's files and their format: one place for the names every side uses (the
export, the runner on the ranks, the comparison, the command line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mpiworkbench.client.calls.output import printed_digest as digest  # (the session's digests are the same function's)

#: The version of ``job.json``; a runner refuses a job of another (the error says which).
FORMAT = 1
PROGRAM = "job.py"
META = "job.json"
DATA = "data"
RUN_SH = "run.sh"
SBATCH = "job.sbatch"
README = "README.md"
OUTPUT = "output"
#: In a run's directory: each rank's records (one JSON line per call), the cells' output as
#: ``%%px`` shows it, the values, and what the comparison found.
RANK_RECORDS = "rank-{rank}.jsonl"
CELLS = "cells.txt"
VALUES = "values.npz"
SESSION_VALUES = "session-values.npz"
COMPARE = "compare.json"
TRACE = "trace-{number:04d}.json"



def data_file(number: int) -> str:
    """The path, relative to the job's directory, of call *number*'s function and arguments."""
    return f"{DATA}/{number:04d}.pkl"


def output_dir(job_dir: str | Path, np: int) -> Path:
    """Where a run of the job at *np* ranks writes."""
    return Path(job_dir) / OUTPUT / f"np-{np}"


def read_meta(job_dir: str | Path) -> dict[str, Any]:
    """The job's ``job.json``, checked: a clear error for a directory that is not a job, or a job
    of another format."""
    path = Path(job_dir) / META
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: {str(job_dir)!r} is not a job directory "
                                f"written by wb.export_job(path); name one that has a {META}")
    meta = json.loads(path.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{path} is a job of format {meta.get('format')!r}, and this mpiworkbench reads format "
                         f"{FORMAT}: export the session again with this version, or run the job with the "
                         f"mpiworkbench that wrote it ({meta.get('mpiworkbench', 'unknown')})")
    return meta


def entry(calls: dict[int, dict[str, Any]], number: int) -> dict[str, Any]:
    """The record of call *number* among *calls* (``{number: record}``, :func:`calls_by_number`):
    a clear error naming the numbers there are."""
    if number in calls:
        return calls[number]
    raise ValueError(f"job.py names call {number}, which {META} does not hold (calls "
                     f"{', '.join(map(str, calls)) or 'none'}): was job.py edited to "
                     f"add it? Only the calls the export wrote can run")


def calls_by_number(meta: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """``{number: record}`` of *meta*'s calls (looked up once per call, not searched)."""
    return {call["number"]: call for call in meta["calls"]}
