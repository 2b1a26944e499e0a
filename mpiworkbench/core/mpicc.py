"""Which ``mpicc`` belongs to an MPI library: the candidates, in the order a centre's install puts
them, and the proof that settles it.

A compiler wrapper belongs to a library when what it builds maps that library file and no other,
and reports the same ``MPI_Get_library_version``. Nothing less proves it: markers in ``mpi.h``
tell a family (MPICH's ABI, Open MPI's), and a machine with Intel MPI loaded from a module,
Debian's MPICH and Open MPI beside it has three compilers of two families on ``PATH``, each
building parts that load *its* library into a rank whose mpi4py loads another.

:func:`candidates` lists, without running anything: the compiler named by the user, the one
mpi4py was built with, the wrappers of the library's own install tree (``bin/`` beside its
``lib/``, under the prefixes module files set: ``I_MPI_ROOT``, ``MPI_HOME``, ``OPAL_PREFIX``, …),
the one beside the launcher, those on ``PATH``, and HPE Cray's ``cc`` under its programming
environment. :func:`prove` builds :data:`PROBE` with one, runs it (under the launcher) and
compares. A probe's result is kept in the cache (:mod:`mpiworkbench.core.cache`), keyed by the
compiler file and the environment that drives it, so a proof costs a build once per machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from mpiworkbench.core import mpifiles
from mpiworkbench.core.cache import cache_dir

__all__ = ["NAMES", "PREFIX_VARIABLES", "PROBE", "Linked", "candidates", "install_tree", "link", "prove", "describe"]

#: Compiler wrappers' names, in the order they are tried in one directory (Intel MPI's ``mpicc``
#: drives gcc, ``mpiicx`` and ``mpiicc`` Intel's compilers; Debian suffixes its alternatives).
NAMES = ("mpicc", "mpicc.mpich", "mpicc.openmpi", "mpiicx", "mpiicc", "mpigcc")
#: Variables module files (and Spack's, conda's activation) set to an MPI's install prefix.
PREFIX_VARIABLES = ("I_MPI_ROOT", "MPI_HOME", "MPI_ROOT", "MPI_DIR", "MPIHOME", "OPAL_PREFIX", "MPICH_DIR",
                    "MPICH_HOME", "MVAPICH_HOME", "MVAPICH2_HOME", "CONDA_PREFIX")
#: Variables that tell HPE Cray's programming environment is loaded (its ``cc`` wraps MPI).
CRAY_VARIABLES = ("CRAYPE_VERSION", "PE_ENV")
#: Levels above the library's directory searched for a ``bin/`` (``lib/release/libmpi.so.12``
#: of Intel MPI 2021 is two below its prefix; Debian's ``/usr/lib/x86_64-linux-gnu`` two).
ANCESTORS = 3
#: Seconds a probe may take to build or to run.
LIMIT_S = 120

#: The probe: the library version, a line of its own, then the process's maps.
SEPARATOR = "--mpiworkbench-maps--"
PROBE = r"""#include <mpi.h>
#include <stdio.h>
int main(void) {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0, c;
    FILE *maps;
    MPI_Get_library_version(version, &length); /* allowed before MPI_Init (MPI-3) */
    printf("%s\n%s\n", version, "SEPARATOR");
    maps = fopen("/proc/self/maps", "r");
    while (maps && (c = fgetc(maps)) != EOF)
        putchar(c);
    return 0;
}
""".replace("SEPARATOR", SEPARATOR)

#: Variables whose values change what a compiler wrapper builds or what its probe loads.
_DRIVING = ("PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CC", "CFLAGS", "LDFLAGS",
            "LD_PRELOAD", *PREFIX_VARIABLES, *CRAY_VARIABLES)
_DRIVING_PREFIXES = ("I_MPI_", "OMPI_", "OPAL_", "MPICH_", "PRTE_", "PMIX_", "FI_", "CRAY")


def install_tree(library: str, env: Mapping[str, str]) -> list[str]:
    """The ``bin/`` directories of *library*'s install tree: beside its ``lib/`` (up to
    :data:`ANCESTORS` levels up), then under each prefix variable set in *env*."""
    found: list[str] = []
    directory = Path(library).parent
    for _ in range(ANCESTORS):
        directory = directory.parent
        found.append(str(directory / "bin"))
        if directory.parent == directory:
            break
    found += [os.path.join(env[name], "bin") for name in PREFIX_VARIABLES if env.get(name)]
    return list(dict.fromkeys(found))


def candidates(env: Mapping[str, str], library: str, built_with: str = "", launcher: str = "",
               own: Iterable[str] = ()) -> list[str]:
    """The compilers to try for *library*, in order: mpi4py's (*built_with*), its install tree's,
    the sibling of *launcher* (``mpiexec.openmpi`` → ``mpicc.openmpi``), those on ``PATH``, Cray's
    ``cc``. Directories in *own* (the venv's ``bin``, the package's PyPI MPIs) are skipped: their
    compilers belong to libraries of the package's, never to a site's. Each file once."""
    own_dirs = {os.path.realpath(d) for d in own}
    listed: list[str] = [built_with] if built_with else []
    for directory in install_tree(library, env):
        listed += [os.path.join(directory, name) for name in NAMES]
    if launcher:
        name = os.path.basename(launcher)
        suffix = name[name.index("."):] if "." in name else ""
        listed.append(os.path.join(os.path.dirname(launcher), "mpicc" + suffix))
    path = [d for d in env.get("PATH", "").split(os.pathsep) if d]
    listed += [os.path.join(d, name) for d in path for name in NAMES]
    if any(env.get(name) for name in CRAY_VARIABLES):
        listed += [os.path.join(d, "cc") for d in path]
    found: dict[str, str] = {}
    for candidate in listed:
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        if os.path.realpath(os.path.dirname(candidate)) in own_dirs and candidate != built_with:
            continue
        found.setdefault(os.path.realpath(candidate), candidate)
    return list(found.values())


@dataclass(frozen=True)
class Linked:
    """What a probe built by a compiler did: the library version it printed, the MPI library
    files it mapped (real paths), or why it could not be built or run."""

    version: str = ""
    files: tuple[str, ...] = ()
    error: str = ""


def _key(compiler: str, env: Mapping[str, str], launch: Sequence[str]) -> str:
    stat = os.stat(compiler)
    parts = [PROBE, os.path.realpath(compiler), str(stat.st_mtime_ns), str(stat.st_size), *launch]
    parts += [f"{k}={v}" for k, v in sorted(env.items()) if k in _DRIVING or k.startswith(_DRIVING_PREFIXES)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def link(compiler: str, env: Mapping[str, str], launch: Sequence[str] = ()) -> Linked:
    """Build :data:`PROBE` with *compiler* and run it (after the command *launch*, e.g.
    ``mpiexec -n 1``) in environment *env*; cached per compiler file and driving variables."""
    try:
        entry = cache_dir() / "mpicc-proofs" / f"{_key(compiler, env, launch)}.json"
    except OSError as exc:
        return Linked(error=f"cannot be read: {exc}")
    try:
        kept = json.loads(entry.read_text())
        found = Linked(str(kept["version"]), tuple(kept["files"]), str(kept["error"]))
        if all(os.path.exists(f) for f in found.files):
            return found
    except (OSError, ValueError, TypeError, KeyError):
        pass
    found = _link(compiler, env, launch)
    if not found.error or "timed out" not in found.error:  # a slow machine's time-out is no fact to keep
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": found.version, "files": list(found.files), "error": found.error}))
        os.replace(tmp, entry)
    return found


def _link(compiler: str, env: Mapping[str, str], launch: Sequence[str]) -> Linked:
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-mpicc-") as tmp:
        source, program = Path(tmp, "probe.c"), Path(tmp, "probe")
        source.write_text(PROBE)
        try:
            built = subprocess.run([compiler, "-o", str(program), str(source)], capture_output=True, text=True,
                                   env=dict(env), timeout=LIMIT_S, check=False)
        except subprocess.TimeoutExpired:
            return Linked(error=f"timed out building a probe ({LIMIT_S} s)")
        except OSError as exc:
            return Linked(error=f"cannot run: {exc}")
        if built.returncode != 0:
            said = " ".join((built.stderr or built.stdout).strip().splitlines()[-2:])[:300]
            return Linked(error=f"cannot build an MPI program here ({said or f'exit code {built.returncode}'})")
        try:
            ran = subprocess.run([*launch, str(program)], capture_output=True, text=True, env=dict(env),
                                 timeout=LIMIT_S, check=False)
        except subprocess.TimeoutExpired:
            return Linked(error=f"timed out running its probe ({LIMIT_S} s)")
        except OSError as exc:
            return Linked(error=f"cannot run its probe: {exc}")
    version, separator, maps = ran.stdout.partition(SEPARATOR)
    if ran.returncode != 0 or not separator:
        said = " ".join(ran.stderr.strip().splitlines()[-2:])[:300]
        return Linked(error=f"builds a probe that fails ({said or f'exit code {ran.returncode}'})")
    return Linked(version=version.replace("\x00", "").strip(), files=tuple(mpifiles.mpi_files(maps)))


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def prove(compiler: str, env: Mapping[str, str], library: str, version: str, launch: Sequence[str] = ()) -> str:
    """``""`` when *compiler* builds programs that map *library* alone (the real path of
    mpi4py's) and report its *version*; otherwise why not, in a phrase naming what it links."""
    found = link(compiler, env, launch)
    if found.error:
        return f"{compiler} {found.error}"
    if list(found.files) != [os.path.realpath(library)]:
        what = " and ".join(found.files) or "no MPI library file"
        return f"{compiler} links {what} ({describe(found.version)}), not mpi4py's {library}"
    if not _same(found.version, version):
        return f"{compiler} reports {describe(found.version)!r} through {library}, not {describe(version)!r}"
    return ""


def describe(version: str) -> str:
    """The first line of a library version, its spaces folded: ``MPICH Version: 4.0.2``."""
    return " ".join((version.splitlines() or ["an unknown MPI"])[0].split())
