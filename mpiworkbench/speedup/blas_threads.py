"""One BLAS thread per MPI rank while a speedup point is timed.

NumPy's OpenBLAS starts one thread per core by default. Two MPI ranks on two cores then
run four busy threads, and ``numpy.inner`` on 2 ranks can be *many times slower* than on
one (measured: docs/measurements.md, The ranks' environment). The
MPI ranks are the parallelism being measured, so the runner limits every loaded OpenBLAS
to one thread for the timed region and restores it afterwards. Found like
``threadpoolctl`` does: through the libraries mapped into this process.
"""

from __future__ import annotations

import ctypes
import os
from contextlib import contextmanager
from typing import Iterator

_SETTERS = ("openblas_set_num_threads", "openblas_set_num_threads64_", "scipy_openblas_set_num_threads64_")
_GETTERS = ("openblas_get_num_threads", "openblas_get_num_threads64_", "scipy_openblas_get_num_threads64_")


def _openblas_libraries() -> list[ctypes.CDLL]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return []
    libs = []
    for path in sorted(paths):
        if os.path.exists(path):
            try:
                libs.append(ctypes.CDLL(path))
            except OSError:
                continue
    return libs


def _first(lib: ctypes.CDLL, names: tuple[str, ...]):
    for name in names:
        func = getattr(lib, name, None)
        if func is not None:
            return func
    return None


@contextmanager
def limit_blas_threads(n: int = 1) -> Iterator[list[int]]:
    """Within the block, every loaded OpenBLAS uses *n* threads; yields the previous counts."""
    changed = []
    for lib in _openblas_libraries():
        getter, setter = _first(lib, _GETTERS), _first(lib, _SETTERS)
        if getter is None or setter is None:
            continue
        getter.restype = ctypes.c_int
        before = int(getter())
        setter.argtypes = [ctypes.c_int]
        setter(int(n))
        changed.append((setter, before))
    try:
        yield [before for _, before in changed]
    finally:
        for setter, before in changed:
            setter(before)
