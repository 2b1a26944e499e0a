"""The site's MPI: the library the installed mpi4py loads, and the launcher and compiler that
belong to it — detected, never guessed.

On a cluster the MPI is the centre's (an environment module, Spack, the distribution's packages,
Cray MPICH, Intel MPI), and mpi4py is built against it (``MPICC=mpicc pip install --no-binary
mpi4py mpi4py``) or pointed at it (``MPI4PY_LIBMPI``). :func:`detect` finds out, in a child
process (this module never loads MPI into the caller):

* **the library**: the ``libmpi`` mpi4py maps when its ``MPI`` module is imported (without
  ``MPI_Init``), with its ``MPI_Get_library_version`` and its *family*: ``openmpi`` (Open MPI)
  or ``mpich`` (the MPICH ABI: MPICH, Intel MPI, MVAPICH, Cray MPICH);
* **the launcher**: ``$MPIWORKBENCH_MPIEXEC``, else the first ``mpiexec`` of that family found
  beside the library's prefix, beside the ``mpicc`` mpi4py was built with, or on ``PATH`` (the
  venv's own ``bin``, where the ``mpich`` wheel puts MPICH's Hydra, is skipped). Its family is
  what ``mpiexec --version`` says;
* **the compiler**: the first that is *proven* to belong to that library, of ``$MPIWORKBENCH_MPICC``
  (alone, when set), the ``mpicc`` mpi4py was built with, the wrappers of the library's install
  tree (``bin/`` beside its ``lib/``, under ``$I_MPI_ROOT``, ``$MPI_HOME``, ``$OPAL_PREFIX`` and the
  other prefixes modules set), the one beside the launcher, those on ``PATH`` (``mpicc``,
  ``mpiicx``, ``mpiicc``, Debian's ``mpicc.mpich``, HPE Cray's ``cc`` under its programming
  environment). Proven means: a probe built by it and run under the launcher maps the very
  library file mpi4py maps, alone, and its ``MPI_Get_library_version`` equals mpi4py's
  (:func:`prove_compiler`; cached per compiler and environment). A compiler's markers (the
  family its ``mpi.h`` defines) are never taken for proof: a compiler of MPICH's family may be
  another MPICH than mpi4py's, and Debian's ``mpicc.mpich`` beside a module's Intel MPI is one.

A launcher of another family, or a compiler of another library, is never used: :class:`Detected`
keeps what was passed over and why, so ``mpiworkbench info`` and every refusal can name both sides.

The facts travel to the ranks in :data:`FACTS_VARIABLE`, so a rank does not detect again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from mpiworkbench.core import mpicc, mpifiles

#: Names the site's ``mpiexec`` (when it is not the first of its family on ``PATH``).
MPIEXEC_VARIABLE = "MPIWORKBENCH_MPIEXEC"
#: Names the site's ``mpicc``.
MPICC_VARIABLE = "MPIWORKBENCH_MPICC"
#: The detected facts, as JSON, in the environment of everything started under the site's MPI.
FACTS_VARIABLE = "MPIWORKBENCH_SITE_MPI"

#: The families of MPI libraries: which launchers and headers belong together.
FAMILIES = {"openmpi": "Open MPI", "mpich": "MPICH ABI"}
#: A string each family's ``MPI_Get_library_version`` contains (the site's ``marker``).
MARKERS = {"openmpi": "Open MPI", "mpich": "MPICH"}

#: Seconds a probe (a child process importing mpi4py, an ``mpiexec --version``) may take.
PROBE_LIMIT_S = 120


_PROBE = r"""
import json, os, re, sys
import mpi4py
mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI
pattern = re.compile(sys.argv[1])
library = ""
with open("/proc/self/maps") as maps:
    for line in maps:
        parts = line.split()
        if len(parts) >= 6 and pattern.match(os.path.basename(parts[-1])):
            library = os.path.realpath(parts[-1])
            break
config = {}
try:
    config = dict(mpi4py.get_config())
except Exception:
    pass
print(json.dumps({"library": library, "version": MPI.Get_library_version().replace("\x00", "").strip(),
                  "extension": MPI.__file__, "mpi4py": mpi4py.__version__, "config": config}))
"""


def family_of_version(text: str) -> str | None:
    """``openmpi`` or ``mpich`` for an ``MPI_Get_library_version`` string (``None``: unknown)."""
    if "Open MPI" in text:
        return "openmpi"
    if any(mark in text for mark in ("MPICH", "Intel(R) MPI", "MVAPICH")):
        return "mpich"
    return None


def _run(command: list[str], env: Mapping[str, str] | None = None, stdin: str | None = None):
    return subprocess.run(command, capture_output=True, text=True, input=stdin, env=dict(env or os.environ),
                          timeout=PROBE_LIMIT_S, check=False)


def probe_library(env: Mapping[str, str] | None = None) -> dict:
    """What mpi4py loads in a child process with environment *env*: ``library`` (the real path
    of the ``libmpi`` mapped), ``version``, ``extension`` (mpi4py's ``MPI`` module file),
    ``mpi4py`` (its version) and ``config`` (``mpi4py.get_config()``: ``mpicc`` for a source build).
    A ``RuntimeError`` says why when mpi4py cannot load an MPI library at all."""
    proc = _run([sys.executable, "-c", _PROBE, mpifiles.LIBRARY_NAME.pattern], env)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"mpi4py could not load an MPI library ({sys.executable} -c 'from mpi4py import MPI' "
                           f"exited with {proc.returncode}):\n{tail}{_mislinked(tail, env)}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mislinked(said: str, env: Mapping[str, str] | None) -> str:
    """Why a source build of mpi4py misses a symbol, when its ``MPI`` module links another MPI's
    library than the one whose ``mpi.h`` it was compiled with: the ``-L`` of a distribution's
    Python (``/usr/lib/x86_64-linux-gnu``, where ``libopenmpi-dev`` and ``libmpich-dev`` put their
    ``libmpi.so``) comes before the wrapper's own on mpi4py's link line. ``""`` otherwise."""
    if "undefined symbol" not in said:
        return ""
    import importlib.util  # lazy: only a failed probe needs to find mpi4py's files

    spec = importlib.util.find_spec("mpi4py")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for module in sorted(Path(folders[0]).glob("MPI.*.so")) if folders else []:
        needed = [name for name in mpifiles.dynamic(str(module))[1] if mpifiles.is_mpi_library(name)]
        if not needed:
            continue
        found = mpifiles.resolved(str(module), env)
        linked = [found[name] for name in needed if name in found]
        return (f"\nmpi4py's {module.name} links {', '.join(linked or needed)}, another MPI's library than the "
                "mpi.h it was compiled with, most likely: rebuild it with your MPI's library directory first, "
                "LDFLAGS=-L/path/to/your/mpi/lib MPICC=$(command -v mpicc) pip install --no-binary mpi4py "
                "--no-cache-dir --force-reinstall mpi4py (docs/cluster.md, \"The site's MPI\")")
    return ""


def launcher_family(path: str, env: Mapping[str, str] | None = None) -> tuple[str | None, str]:
    """The family of launcher *path* (``openmpi``, ``mpich`` or ``None``) and the first line of
    its ``--version``."""
    try:
        proc = _run([path, "--version"], env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{path} --version failed: {exc}"
    text = proc.stdout + proc.stderr
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if re.search(r"Open ?MPI|OpenRTE|Open RTE", text):
        return "openmpi", first
    if re.search(r"HYDRA|Intel\(R\) MPI|MPICH|MVAPICH", text):
        return "mpich", first
    return None, first


@dataclass(frozen=True)
class Detected:
    """What :func:`detect` found: the library mpi4py loads and the programs that belong to it."""

    library: str
    version: str
    family: str | None
    mpi4py: str
    extension: str
    built_with: str  # the mpicc mpi4py was built with ("" for a wheel)
    mpiexec: str = ""
    mpicc: str = ""
    #: How each choice was made, and what was passed over (shown by ``mpiworkbench info``).
    reasons: dict = field(default_factory=dict)

    @property
    def title(self) -> str:
        """``Open MPI 4.1.4`` — the first line of the library's version, shortened."""
        first = self.version.splitlines()[0] if self.version else "an unknown MPI"
        words = [w for w in first.replace(",", " ").split() if w.rstrip(":").lower() != "version"]
        return " ".join(words[:3])

    @property
    def source_build(self) -> bool:
        """Whether mpi4py was built from source (then it loads its library whatever
        ``MPI4PY_LIBMPI`` says); the PyPI wheel's modules carry an ABI tag (``MPI.mpich.*``)."""
        name = Path(self.extension).name
        return not (".mpich." in name or ".openmpi." in name or ".mpiabi." in name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _candidates(program: str, near: list[str], path: str, own: frozenset[str] = frozenset()) -> list[str]:
    """Existing files named *program* (or ``program.openmpi``, ``.mpich``, ``.hydra``, Debian's
    alternatives) in the directories *near*, then on *path*; the directories *own* (real paths:
    the venv's ``bin``, where the ``mpich`` wheel puts its ``mpiexec``) skipped."""
    own = frozenset(os.path.realpath(d) for d in own) | {os.path.realpath(Path(sys.executable).parent)}
    found: list[str] = []
    names = [program, f"{program}.openmpi", f"{program}.mpich", f"{program}.hydra"]
    for directory in [*near, *path.split(os.pathsep)]:
        if not directory or os.path.realpath(directory) in own:
            continue
        for name in names:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and candidate not in found:
                found.append(candidate)
    return found


def _pick(kind: str, named: str | None, candidates: list[str], family: str | None, family_of,
          reasons: dict) -> str:
    """The first of *candidates* of *family* (or *named*, which must be of it); records why."""
    passed = []
    if named:
        resolved = shutil.which(named) or named
        got = family_of(resolved)
        if got == family:
            reasons[kind] = f"named by ${MPIEXEC_VARIABLE if kind == 'mpiexec' else MPICC_VARIABLE}"
            return resolved
        reasons[kind] = (f"${MPIEXEC_VARIABLE if kind == 'mpiexec' else MPICC_VARIABLE}={named} is "
                         f"{FAMILIES.get(got or '', 'of an unknown MPI')}'s, not {FAMILIES.get(family or '', '?')}'s")
        return ""
    for candidate in candidates:
        got = family_of(candidate)
        if got == family:
            reasons[kind] = "found" + (f" (passed over: {'; '.join(passed)})" if passed else "")
            return candidate
        passed.append(f"{candidate} is {FAMILIES.get(got or '', 'of an unknown MPI')}'s")
    reasons[kind] = ("none of " + FAMILIES.get(family or "", "this library") + "'s found"
                     + (f" (passed over: {'; '.join(passed)})" if passed else " beside the library, mpi4py's mpicc "
                        "or on PATH"))
    return ""


_cache: dict[tuple, Detected] = {}
#: The variables that change what is detected (the rest of the environment does not).
_KEYED = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "MPI4PY_LIBMPI", MPIEXEC_VARIABLE, MPICC_VARIABLE,
          *mpicc.PREFIX_VARIABLES, *mpicc.CRAY_VARIABLES)


def carried(env: Mapping[str, str] | None = None) -> Detected | None:
    """The facts a launcher carried to this process in :data:`FACTS_VARIABLE` (``None``: none,
    or unreadable): what a rank knows of the site without detecting anything."""
    text = (os.environ if env is None else env).get(FACTS_VARIABLE)
    try:
        return Detected(**json.loads(text)) if text else None
    except (TypeError, ValueError):
        return None


def detect(env: Mapping[str, str] | None = None, *, own_bins: frozenset[str] = frozenset(),
           own_libraries: frozenset[str] = frozenset(), strip: frozenset[str] = frozenset(),
           strip_values: frozenset[tuple[str, str]] = frozenset(),
           run_env: Mapping[str, str] | None = None) -> Detected:
    """The site's MPI as seen with environment *env* (default this process's), detected once per
    environment (and not at all in a process started under it: :data:`FACTS_VARIABLE`).

    What the registry of implementations knows is passed in: *own_bins*, directories whose
    launchers and compilers are this package's (never the site's); *own_libraries*, its libraries
    (an ``MPI4PY_LIBMPI`` naming one was set for a job of ours, not by the site); *strip*,
    variables that are always the package's; *strip_values*, ``(name, value)`` pairs its
    implementations set (``I_MPI_ROOT`` pointing at the package's Intel MPI is not a site's
    module, ``I_MPI_ROOT`` set by one is); *run_env*, variables the site's launcher needs to
    answer and run (Open MPI's as root)."""
    env = dict(os.environ if env is None else env)
    facts = carried(env)
    if facts is not None:
        return facts
    probe_env = {k: v for k, v in env.items() if k not in strip and (k, v) not in strip_values}
    libmpi = probe_env.get("MPI4PY_LIBMPI")
    if libmpi and os.path.realpath(libmpi) in {os.path.realpath(p) for p in own_libraries}:
        del probe_env["MPI4PY_LIBMPI"]  # one of ours, set for a job of ours: not the site's choice
    key = (sys.executable, own_bins, tuple(sorted((run_env or {}).items())),
           *(probe_env.get(name, "") for name in _KEYED))
    if key not in _cache:
        _cache[key] = _detect(probe_env, own_bins, dict(run_env or {}))
    return _cache[key]


def _detect(probe_env: dict[str, str], own_bins: frozenset[str], run_env: dict[str, str]) -> Detected:
    facts = probe_library(probe_env)
    family = family_of_version(facts["version"])
    reasons: dict[str, str] = {"library": "what mpi4py loads" + (
        f" (MPI4PY_LIBMPI={probe_env['MPI4PY_LIBMPI']})" if probe_env.get("MPI4PY_LIBMPI") else "")}
    built_with = str(facts["config"].get("mpicc") or "")
    built_with = shutil.which(built_with.split()[0], path=probe_env.get("PATH")) or built_with if built_with else ""
    tree = mpicc.install_tree(facts["library"], probe_env) if facts["library"] else []
    near = ([os.path.dirname(built_with)] if built_with else []) + tree
    run_env = {**probe_env, **run_env}
    path = probe_env.get("PATH", "")
    mpiexec = _pick("mpiexec", probe_env.get(MPIEXEC_VARIABLE), _candidates("mpiexec", near, path, own_bins) +
                    _candidates("mpirun", near, path, own_bins), family,
                    lambda p: launcher_family(p, run_env)[0], reasons)
    own = own_bins | {str(Path(sys.executable).parent)}
    listed = mpicc.candidates(probe_env, facts["library"], built_with, mpiexec, own)
    compiler = _prove(probe_env.get(MPICC_VARIABLE), listed, facts, run_env, probe_launch(mpiexec, run_env), reasons)
    return Detected(library=facts["library"], version=facts["version"], family=family, mpi4py=facts["mpi4py"],
                    extension=facts["extension"], built_with=built_with, mpiexec=mpiexec, mpicc=compiler,
                    reasons=reasons)


def probe_launch(mpiexec: str, env: Mapping[str, str]) -> list[str]:
    """What runs a compiler's probe as the ranks will run: ``mpiexec -n 1`` (the site's), or
    nothing inside a Slurm allocation (the ranks' ``srun`` would take a job step) or without one."""
    if not mpiexec or env.get("SLURM_JOB_ID"):
        return []
    return [mpiexec, "-n", "1"]


def _prove(named: str | None, listed: list[str], facts: dict, env: dict[str, str], launch: list[str],
           reasons: dict) -> str:
    """The first compiler proven to belong to mpi4py's library (:func:`mpiworkbench.core.mpicc.prove`):
    *named* alone when given, else the first of *listed*; records why, and what was passed over."""
    library, version = facts["library"], facts["version"]
    proven = "proven: a program it builds maps mpi4py's library alone and reports its version"
    if named:
        resolved = shutil.which(named, path=env.get("PATH")) or named
        why = mpicc.prove(resolved, env, library, version, launch) if library else "mpi4py's library file is unknown"
        reasons["mpicc"] = f"named by ${MPICC_VARIABLE}; {proven}" if not why else f"${MPICC_VARIABLE}={named}: {why}"
        return "" if why else resolved
    passed = []
    for candidate in listed if library else []:
        why = mpicc.prove(candidate, env, library, version, launch)
        if not why:
            reasons["mpicc"] = proven + (f" (passed over: {'; '.join(passed)})" if passed else "")
            return candidate
        passed.append(why)
    reasons["mpicc"] = (f"none of the compilers found builds against mpi4py's library {library or '(unknown)'}"
                        + (f" (passed over: {'; '.join(passed)})" if passed else
                           " (none beside the library, in its install tree, mpi4py's or on PATH)")
                        + f"; name one: {MPICC_VARIABLE}=/path/to/mpicc")
    return ""
