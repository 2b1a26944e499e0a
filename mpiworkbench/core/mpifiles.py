"""Which MPI library files a process has mapped: read from ``/proc/self/maps``, never guessed.

An MPI library file is one whose name is an MPI's ``libmpi`` under any of the names the
implementations give it: ``libmpi.so.12`` (MPICH, Intel MPI, MVAPICH, the MPICH wheel),
``libmpich.so.12`` (Debian's and Spack's MPICH), ``libmpi.so.40`` (Open MPI), ``libmpi_cray.so``
and ``libmpi_gnu_123.so`` (HPE Cray MPICH), ``libmpi_intel.so``, ``libmpi_ibm.so``, and the MPI
standard ABI's ``libmpi_abi.so``. Symbolic links are followed (Debian's ``libmpi.so.12`` is
``libmpich.so.12.2.2``), so one library is one file, however many names it has. The
interposer (``libmpi.wbtrace-….so``) and an MPI's companions (``libmpifort``, ``libmpicxx``,
``libopen-pal``, ``libfabric``) are not MPI library files.

This module imports nothing of mpiworkbench and nothing that loads MPI: a rank asks it before
its first MPI call (:mod:`mpiworkbench.core.onempi`), the site's detection in a child process.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
from typing import Mapping

__all__ = ["LIBRARY_NAME", "is_mpi_library", "mpi_files", "mapped_files", "dynamic", "resolved", "rank_label"]

#: The file names of MPI libraries (see the module's docstring).
LIBRARY_NAME = re.compile(r"^lib(mpi|mpich|mpi_abi|mpi_cray|mpi_gnu\w*|mpi_intel\w*|mpi_ibm|mpi_mt|mpi_dbg)"
                          r"\.so(\.\d+)*$")


def is_mpi_library(path: str) -> bool:
    """Whether *path* names an MPI library file (by its name: see :data:`LIBRARY_NAME`)."""
    return bool(LIBRARY_NAME.match(os.path.basename(path)))


def mapped_files(maps: str | None = None) -> list[str]:
    """Every file mapped into this process (or listed in *maps*, the text of a
    ``/proc/PID/maps``), as listed, each once, in the order of first appearance."""
    if maps is None:
        try:
            with open("/proc/self/maps") as handle:
                maps = handle.read()
        except OSError:
            return []
    found: dict[str, None] = {}
    for line in maps.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            found.setdefault(parts[5].removesuffix(" (deleted)"), None)
    return list(found)


def mpi_files(maps: str | None = None) -> list[str]:
    """The MPI library files mapped into this process (or listed in *maps*), as real paths,
    each once, in the order they were mapped."""
    found: dict[str, None] = {}
    for path in mapped_files(maps):
        if is_mpi_library(path):
            found.setdefault(os.path.realpath(path), None)
    return list(found)


#: What launchers tell a rank of its rank before MPI does (Hydra and PMI, Open MPI, PMIx, Slurm).
_RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")


def rank_label() -> str:
    """``rank 3`` as the launcher numbered this process (known before ``MPI_Init``), or
    ``process 1234`` when no launcher said."""
    for name in _RANK_VARIABLES:
        value = os.environ.get(name)
        if value and value.isdigit():
            return f"rank {value}"
    return f"process {os.getpid()}"


_DT_NEEDED, _DT_STRTAB, _DT_SONAME = 1, 5, 14
_PT_LOAD, _PT_DYNAMIC = 1, 2


def dynamic(path: str) -> tuple[str, list[str]]:
    """The ``DT_SONAME`` and ``DT_NEEDED`` names of shared object *path* (a 64-bit little-endian
    ELF file, as every Linux on x86-64 and aarch64 has); ``("", [])`` for any other file.

    What the dynamic loader reads: a library already loaded under a needed name is reused, so an
    MPI-linking part brings no second MPI when the one loaded has the name it needs."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return "", []
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return "", []
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dyn = [], None
    for i in range(phnum):
        kind, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if kind == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif kind == _PT_DYNAMIC:
            dyn = (offset, filesz)
    if dyn is None:
        return "", []
    entries = [struct.unpack_from("<qQ", data, dyn[0] + i) for i in range(0, dyn[1], 16)]
    strtab = next((value for tag, value in entries if tag == _DT_STRTAB), None)
    if strtab is None:
        return "", []
    base = next((offset + strtab - vaddr for vaddr, offset, size in loads if vaddr <= strtab < vaddr + size), strtab)

    def text(at: int) -> str:
        return data[base + at:data.index(b"\0", base + at)].decode(errors="replace")

    soname = next((text(value) for tag, value in entries if tag == _DT_SONAME), "")
    return soname, [text(value) for tag, value in entries if tag == _DT_NEEDED]


def resolved(path: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Needed name → the real path the dynamic loader resolves it to, for shared object *path*
    (``ldd`` in environment *env*, default this process's, without its ``LD_PRELOAD``: what the
    file itself brings); empty when ``ldd`` cannot tell."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "LD_PRELOAD"}
    try:
        shown = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=30, env=env, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for line in shown.splitlines():
        name, arrow, rest = line.partition("=>")
        target = rest.split("(")[0].strip() if arrow else ""
        if target.startswith("/"):
            found[name.strip()] = os.path.realpath(target)
    return found
