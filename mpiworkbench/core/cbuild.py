"""Compile the package's C sources into shared libraries with the ``mpicc`` of the MPI in use.

Used by the C backend, the C benchmark loops and the C solver kernels. The compiler is the one
that belongs to the implementation's library (the venv's own ``mpicc``, a PyPI MPI's in its
prefix, or the site's, proven by :mod:`mpiworkbench.core.mpicc`). Libraries are built on first
use and cached under ``$MPIWORKBENCH_CACHE`` (default ``~/.cache/mpiworkbench``), keyed by a hash
of the sources, the compiler, the MPI library it links and the flags, so editing a source
rebuilds it and concurrent ranks never see a half-written file. A library that links MPI is
checked, once loaded, to have brought no second MPI into the process (:mod:`mpiworkbench.core.onempi`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mpiworkbench.core import implementations, onempi
from mpiworkbench.core.cache import cache_dir

#: Optimisation flags shared by every C library we build (the C reference must be fair).
CFLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=c11")

_loaded: dict[str, ctypes.CDLL] = {}


def find_compiler(mpi: bool = True, impl=None) -> str:
    """Path of the ``mpicc`` of MPI implementation *impl* (default: this process's; for the
    venv's own, beside this Python first, as the ``mpich`` wheel installs it), or ``cc``."""
    impl = impl or implementations.current()
    if mpi and not impl.in_venv:
        compiler = impl.require().bin("mpicc")
        if not compiler.exists():
            raise FileNotFoundError(
                f"cannot build the C code under {impl.title}: no mpicc at {compiler}; "
                f"install it with: {impl.install_command()}")
        return str(compiler)
    names = ("mpicc",) if mpi else ("cc", "gcc", "clang")
    for name in names:
        beside = Path(sys.executable).with_name(name)
        if beside.exists():
            return str(beside)
        found = shutil.which(name)
        if found:
            return found
    wanted = "mpicc (pip install mpich)" if mpi else "a C compiler (cc, gcc or clang)"
    raise FileNotFoundError(
        f"cannot build the C code: no {wanted} found beside {sys.executable} or on PATH; "
        "install one (Debian: apt-get install gcc) and try again"
    )


def library_path(name: str, sources: list[Path], mpi: bool = True, extra_flags: tuple[str, ...] = (),
                 impl=None) -> Path:
    """Where the library built from *sources* is cached: keyed by the sources, the flags, the
    compiler and, for an MPI build, the library file it links (one build per MPI library)."""
    compiler = find_compiler(mpi, impl)
    digest = hashlib.sha256()
    linked = os.path.realpath((impl or implementations.current()).library_file()) if mpi else ""
    for part in (compiler, linked, *CFLAGS, *extra_flags):
        digest.update(part.encode())
    for src in sources:
        digest.update(Path(src).read_bytes())
    return cache_dir() / f"lib{name}-{digest.hexdigest()[:16]}.so"


def build(name: str, sources: list[str | Path], mpi: bool = True, extra_flags: tuple[str, ...] = (),
          impl=None) -> Path:
    """Compile *sources* into a cached shared library and return its path (with the ``mpicc``
    of MPI implementation *impl*, default this process's, when *mpi*)."""
    impl = impl or implementations.current()
    sources = [Path(s) for s in sources]
    target = library_path(name, sources, mpi, extra_flags, impl)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    compiler = find_compiler(mpi, impl)
    fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".tmp", dir=target.parent)
    os.close(fd)
    cmd = [compiler, *CFLAGS, *extra_flags, "-o", tmp, *map(str, sources), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=impl.apply(os.environ))
    if proc.returncode != 0:
        os.unlink(tmp)
        raise RuntimeError(f"compiling {name} failed:\n$ {' '.join(cmd)}\n{proc.stderr}")
    os.replace(tmp, target)  # atomic: other ranks building at the same time are harmless
    return target


def load(name: str, sources: list[str | Path], mpi: bool = True, extra_flags: tuple[str, ...] = ()) -> ctypes.CDLL:
    """Build if needed, then load the library (once per process); one linking MPI must bring
    no second MPI library into the process (:func:`mpiworkbench.core.onempi.check`)."""
    path = build(name, sources, mpi, extra_flags)
    key = str(path)
    if key not in _loaded:
        _loaded[key] = ctypes.CDLL(key, mode=ctypes.RTLD_GLOBAL)
        if mpi:
            onempi.check(f"after loading {path.name}")
    return _loaded[key]
