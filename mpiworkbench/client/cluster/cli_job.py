"""A CLI command run from the notebook's process, in a process of its own, that writes its result
to a file: what the panels' **Also under** runs (``mpiworkbench bench|speedup … --mpi NAME``
under an implementation other than the engines'). Blocking, or awaited without blocking the
kernel; either way the file is read back by *read* and the temporary directory removed."""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
#: ``read(path, exit_code, stderr)``: the result the job wrote to *path*, or an error saying why not.
Reader = Callable[[Path, int, str], T]


def failure(what: str, code: int, stderr: str) -> RuntimeError:
    """The error of a job that wrote nothing: *what* failed, its exit code, its last lines."""
    tail = "\n".join(stderr.strip().splitlines()[-6:])
    return RuntimeError(f"{what} failed (exit {code}):\n{tail}")


def run(argv_for: Callable[[Path], Sequence[str]], read: Reader) -> T:
    """Run ``argv_for(path)`` to its end and return ``read(path, exit code, stderr)``."""
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-job-") as tmp:
        path = Path(tmp) / "result.json"
        proc = subprocess.run(list(argv_for(path)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, check=False)
        return read(path, proc.returncode, proc.stderr)


async def run_async(argv_for: Callable[[Path], Sequence[str]], read: Reader) -> T:
    """:func:`run` without blocking the kernel."""
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-job-") as tmp:
        path = Path(tmp) / "result.json"
        proc = await asyncio.create_subprocess_exec(*argv_for(path), stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.PIPE)
        _, stderr = await proc.communicate()
        return read(path, proc.returncode, stderr.decode(errors="replace"))
