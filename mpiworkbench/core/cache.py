"""Where the package keeps what it builds and proves once per machine: ``$MPIWORKBENCH_CACHE``,
default ``$XDG_CACHE_HOME/mpiworkbench`` (``~/.cache/mpiworkbench``).

The C libraries (:mod:`mpiworkbench.core.cbuild`), the interposer, and the proofs of which
``mpicc`` belongs to which MPI library (:mod:`mpiworkbench.core.mpicc`) live there, each keyed
by a hash of what made it, so a changed source, compiler or library makes a new entry.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The package's cache directory (not created here)."""
    root = os.environ.get("MPIWORKBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "mpiworkbench"
    )
    return Path(root)
