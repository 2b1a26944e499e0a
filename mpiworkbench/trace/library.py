"""The interposer library: built on demand with the venv's ``mpicc``, preloaded into ranks.

The library is named ``libmpi.wbtrace-<hash>.so`` on purpose: numba-mpi opens "the mapped
library whose name looks like ``libmpi.``" itself (``ctypes.CDLL``) and resolves its symbols
on that handle, which would bypass a preloaded interposer; with this name numba-mpi's own rule
picks the interposer (it re-exports the rest of libmpi), so numba-mpi calls are traced too.
:func:`numba_mpi_traced` checks it rather than assuming it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

from mpiworkbench.core import implementations

SOURCE = Path(__file__).with_name("interposer.c")
#: Set to ``0`` to start ranks without the interposer (no trace, no in-flight records).
ENV_SWITCH = "MPIWORKBENCH_INTERPOSER"


def build(impl=None) -> Path:
    """Path of the interposer for MPI implementation *impl* (default: this process's),
    compiled first with its ``mpicc`` if needed (cached like every C library)."""
    from mpiworkbench.core import cbuild  # lazy: cbuild imports subprocess, hashlib and tempfile, which only a build needs

    # a call the library lacks (a wrapper for an MPI-4 function under an MPI-3 library) is an
    # error here, not a symbol lookup error in a rank later
    return cbuild.build("mpi.wbtrace", [SOURCE], mpi=True, impl=impl,
                        extra_flags=("-Werror=implicit-function-declaration",))


def enabled() -> bool:
    """Whether ranks should be started with the interposer (``MPIWORKBENCH_INTERPOSER`` != 0)."""
    return os.environ.get(ENV_SWITCH, "1") not in ("0", "no", "false", "")


def mpiexec_args(impl=None) -> list[str]:
    """Arguments that make the ``mpiexec`` of MPI implementation *impl* (default: this
    process's) preload the interposer into its ranks (only the ranks: ``mpiexec`` itself and
    its proxies never load MPI). Empty when switched off or when the library cannot be built."""
    impl = impl or implementations.current()
    if not enabled():
        return []
    try:
        path = build(impl)
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"mpiworkbench: MPI tracing is unavailable ({exc})", file=sys.stderr)
        return []
    preload = " ".join(p for p in (str(path), os.environ.get("LD_PRELOAD", "")) if p)
    return impl.env_args("LD_PRELOAD", preload)


_lib: ctypes.CDLL | None = None


def handle() -> ctypes.CDLL | None:
    """The interposer as loaded in this process, or ``None`` when it is not (ranks started
    without it; the notebook kernel)."""
    global _lib
    if _lib is not None:
        return _lib
    process = ctypes.CDLL(None)
    if not hasattr(process, "wbtrace_loaded"):
        return None
    lib = process
    I64, D, P, I = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p, ctypes.c_int
    for name, restype, argtypes in (
        ("wbtrace_loaded", I, []),
        ("wbtrace_kind_name", ctypes.c_char_p, [I]),
        ("wbtrace_nkinds", I, []),
        ("wbtrace_sizeof_event", I, []),
        ("wbtrace_sizeof_slot", I, []),
        ("wbtrace_slot_path", ctypes.c_char_p, []),
        ("wbtrace_events_path", ctypes.c_char_p, []),
        ("wbtrace_calls", I64, []),
        ("wbtrace_nevents", I64, []),
        ("wbtrace_dropped", I64, []),
        ("wbtrace_now", D, []),
        ("wbtrace_start", I, [I64]),
        ("wbtrace_stop", None, []),
        ("wbtrace_is_on", I, []),
        ("wbtrace_events", P, []),
        ("wbtrace_ncomms", I, []),
        ("wbtrace_sizeof_comm", I, []),
        ("wbtrace_comms", P, []),
        ("wbtrace_comm_members", I, [I, ctypes.POINTER(ctypes.c_int32), I]),
    ):
        func = getattr(lib, name)
        func.restype = restype
        func.argtypes = argtypes
    _lib = lib
    return lib


def loaded_path() -> str | None:
    """File of the interposer mapped into this process (``None`` when not loaded)."""
    try:
        with open(f"/proc/{os.getpid()}/maps") as maps:
            for line in maps:
                if "libmpi.wbtrace-" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return None


def numba_mpi_traced() -> bool | None:
    """Whether numba-mpi calls go through the interposer (``None``: numba-mpi not installed)."""
    try:
        import numba_mpi.common as common
    except ImportError:
        return None
    path = loaded_path()
    return path is not None and os.path.realpath(str(common.LIB)) == os.path.realpath(path)


if __name__ == "__main__":  # `mpiexec $(python -m mpiworkbench.trace.library) -n N …`
    print(" ".join(mpiexec_args()))
