"""One MPI in every rank, proven: a rank that has mapped two MPI library files, or one other than
the library its implementation names (mpi4py's), refuses to run, naming both files and the part
that brought the second.

Two libraries in one process do not fail loudly. A PMPI interposer built by another MPI's
``mpicc`` and preloaded into the ranks brings that MPI's library along; its symbols win, and the
world runs, measures and reports another MPI than the one it names (or fails at its first call:
"Attempting to use an MPI routine before initializing"). So every rank checks what it mapped
(:mod:`mpiworkbench.core.mpifiles`):

* before its first MPI call (:func:`mpiworkbench.core.mpi.MPI`, and an engine before
  ipyparallel imports mpi4py): what is mapped already (the preloaded interposer and its
  libraries) must be the implementation's library, if anything;
* after mpi4py loaded its library, and after each part that links one (the C libraries built
  by :mod:`mpiworkbench.core.cbuild`, numba-mpi's library lookup): exactly one MPI library file,
  the implementation's.

The implementation's library is what :mod:`mpiworkbench.core.implementations` names for
``$MPIWORKBENCH_MPI`` (the site's: the file mpi4py mapped when the site was detected). A rank
started by a launcher of none of ours (no ``MPIWORKBENCH_MPI``) is held to one file.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mpiworkbench.core import implementations, mpifiles, sitempi

__all__ = ["TwoMPIs", "expected_library", "check", "check_numba_mpi", "check_part", "would_bring", "brought_by"]

#: C libraries :mod:`mpiworkbench.core.cbuild` builds (``lib<name>-<hash>.so``), by what they are.
PARTS = {
    "mpi.wbtrace": "the MPI interposer (traces, hang reports)",
    "wbbackend": "the C backend",
    "wbbench": "the C backend's timed loops",
    "wbsnippets": "the C syntax snippets",
    "mwb_inner": "the C inner loop of the speedup experiments",
}
_BUILT = re.compile(r"^lib(?P<name>[\w.]+)-[0-9a-f]{16}\.so$")


class TwoMPIs(implementations.MPIMismatch):
    """A rank holding two MPI libraries, or one other than its implementation's."""


def expected_library() -> str | None:
    """The real path of the library this rank's implementation names (``None``: no
    implementation was named for it, or its library file is not there). The site's is read from
    the facts its launcher carried (:data:`~mpiworkbench.core.sitempi.FACTS_VARIABLE`): a rank
    never detects (that starts processes, a probe under ``mpiexec`` among them)."""
    name = os.environ.get(implementations.VARIABLE)
    if not name:
        return None
    if name == implementations.SITE:
        facts = sitempi.carried()
        path = Path(facts.library if facts else "")
    else:
        try:
            path = implementations.get(name).library_file()
        except ValueError:
            return None
    return os.path.realpath(path) if path.name and path.exists() else None


def check(when: str = "at its start") -> str | None:
    """Refuse (:class:`TwoMPIs`) a rank whose mapped MPI library files are not the one its
    implementation names; the one file (``None`` while none is mapped yet)."""
    files = mpifiles.mpi_files()
    expected = expected_library()
    others = [f for f in files if f != expected] if expected else files[1:]
    if not others:
        return files[0] if files else None
    raise TwoMPIs(refusal(files, expected, others, when))


def refusal(files: list[str], expected: str | None, others: list[str], when: str) -> str:
    """The message of :func:`check`'s refusal (one message, both files, what brought the other)."""
    who = mpifiles.rank_label()
    name = os.environ.get(implementations.VARIABLE, "")
    ours = f"the library of {implementations.VARIABLE}={name}, what mpi4py loads" if expected else "mpi4py's"
    first = expected or files[0]
    brought = [(other, *brought_by(other)) for other in others]
    told = "; ".join(f"{other}, brought by {what}" for other, what, _ in brought)
    if expected and first not in files:
        head = f"{who} {when} maps {told}, not {first} ({ours})"
    else:
        head = f"{who} {when} maps two MPI libraries: {first} ({ours}) and {told}"
    return (f"{head}. A world holding two MPIs runs and measures another MPI than the one it names, so it is "
            f"refused: {' '.join(dict.fromkeys(fix for _, _, fix in brought))}")


#: What to do about a second MPI library, by what brought it.
_FIX_BUILT = ("remove {path}: it is built again, by the compiler of mpi4py's library (`mpiworkbench info` names it "
              "and says why; name it yourself with MPIWORKBENCH_MPICC=/path/to/mpicc).")
_FIX_PRELOAD = "take it out of LD_PRELOAD."
_FIX_NUMBA = "load only mpi4py's MPI library in the ranks (LD_PRELOAD, LD_LIBRARY_PATH)."
_FIX_OTHER = "load only mpi4py's MPI library in the ranks (LD_PRELOAD, LD_LIBRARY_PATH, what your code loads)."


def brought_by(library: str) -> tuple[str, str]:
    """What brought MPI library file *library* into this process (``LD_PRELOAD``, numba-mpi's
    library lookup, or the first of the package's parts whose libraries include it), and what to
    do about it."""
    preload = os.environ.get("LD_PRELOAD", "").replace(":", " ").split()
    if any(os.path.realpath(p) == library for p in preload):
        return "LD_PRELOAD, which names it", _FIX_PRELOAD
    common = sys.modules.get("numba_mpi.common")
    if common is not None and getattr(common, "LIB", None) and os.path.realpath(common.LIB) == library:
        return "numba-mpi's library lookup (numba_mpi.common.LIB)", _FIX_NUMBA
    for path in mpifiles.mapped_files():
        what = _part(path)
        if what and _links(path, library):
            return f"{what} ({path})", _FIX_BUILT.format(path=path) if _BUILT.match(os.path.basename(path)) else _FIX_OTHER
    return ("none of mpiworkbench's parts (LD_PRELOAD="
            f"{' '.join(preload) or '(unset)'})"), _FIX_OTHER


def _part(path: str) -> str:
    """What *path* is of the package's parts and the libraries that link MPI (``""``: none)."""
    base = os.path.basename(path)
    built = _BUILT.match(base)
    if built:
        return PARTS.get(built.group("name"), f"the C library {built.group('name')} built by mpiworkbench")
    if "mpi4jax" in path and base.endswith(".so"):
        return "mpi4jax's XLA bridge"
    if os.sep + "mpi4py" + os.sep in path and base.startswith("MPI.") and base.endswith(".so"):
        return "mpi4py's MPI module"
    return ""


def _links(path: str, library: str) -> bool:
    """Whether shared object *path* loads *library*."""
    return library in mpifiles.resolved(path).values()


def would_bring(part: str) -> list[str]:
    """The MPI library files loading shared object *part* would add to this process: those it
    needs by a name no mapped MPI library has (the loader reuses a library loaded under the name
    it needs, as Intel MPI's ``libmpi.so.12`` serves a part built against MPICH's), resolved as
    the loader would."""
    loaded = set()
    for path in mpifiles.mpi_files():
        loaded |= {mpifiles.dynamic(path)[0], os.path.basename(path)}
    wanted = [name for name in mpifiles.dynamic(part)[1] if mpifiles.is_mpi_library(name) and name not in loaded]
    if not wanted:
        return []
    found = mpifiles.resolved(part)
    return [found.get(name, name) for name in wanted]


def check_part(part: str, what: str) -> None:
    """Refuse (:class:`TwoMPIs`) to load *part* (*what* it is) when it would bring an MPI
    library other than this rank's implementation's: asked before it is loaded, so the rank
    stays clean and only that part is unavailable."""
    expected = expected_library()
    foreign = [f for f in would_bring(part) if f != expected]
    if foreign:
        raise TwoMPIs(f"{what} ({part}) would load {' and '.join(foreign)} beside "
                      f"{expected or 'the MPI library mpi4py loads'}: it was built against another MPI")


_numba_checked = False


def check_numba_mpi() -> None:
    """Refuse a rank whose numba-mpi calls would go to another library than mpi4py's: numba-mpi
    resolves its calls on a mapped file it picks by name (``numba_mpi.common.LIB``), which must be
    the implementation's library or the interposer that wraps it."""
    global _numba_checked
    if _numba_checked:
        return
    check("after importing numba-mpi")
    import numba_mpi.common as common  # lazy: only where numba-mpi is used (it imports numba)

    chosen = os.path.realpath(str(common.LIB or ""))
    expected = expected_library()
    wraps = os.path.basename(chosen).startswith("libmpi.wbtrace-")  # the interposer: it wraps the one library
    if wraps or (mpifiles.is_mpi_library(chosen) and expected in (None, chosen)):
        _numba_checked = True
        return
    raise TwoMPIs(
        f"{mpifiles.rank_label()}: numba-mpi's library lookup chose {chosen or 'no library'} "
        f"(numba_mpi.common.LIB), not {expected or 'the MPI library mpi4py loads'}: its calls would "
        "reach another MPI than mpi4py's. Load only one MPI in the ranks (LD_PRELOAD, LD_LIBRARY_PATH).")
