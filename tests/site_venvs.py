"""Venvs whose mpi4py is built from source against a distribution's MPI: the suite's stand-ins
for a cluster's MPI (``site``, :mod:`mpiworkbench.core.sitempi`).

Each is what a user on a cluster makes (``module load …``; ``MPICC=mpicc pip install --no-binary
mpi4py mpi4py``; then the project), with two economies for the suite:

* the project's other dependencies come from the main venv: a ``.pth`` file adds its
  ``site-packages`` *after* the venv's own, so the venv's own mpi4py wins;
* the mpi4py wheel built for each MPI is kept in the cache (``$MPIWORKBENCH_CACHE``, like every
  C library of the project), keyed by the MPI's ``mpicc -show``, mpi4py's version and the flags,
  and compiled at ``-O0`` (35 s instead of 5 minutes on a loaded 2-core machine: these venvs check
  that every part works, they measure nothing; ``--optimized`` builds with mpi4py's own flags).

The ``mpich`` wheel is installed in each as well, as ``pip install`` of this project did before
it became an extra: the site's detection must pass over its ``mpiexec`` beside the interpreter.

``python -m tests.site_venvs build [NAME ...] [--optimized]`` (``make test`` runs it as root when
the Debian packages are there), ``python -m tests.site_venvs python NAME`` prints a venv's Python.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path

#: The distribution MPIs standing in for a site's: name → (its mpicc, its mpiexec, the Debian packages).
SITES = {
    "debian-openmpi": ("/usr/bin/mpicc.openmpi", "/usr/bin/mpiexec.openmpi", "openmpi-bin libopenmpi-dev"),
    "debian-mpich": ("/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich", "mpich libmpich-dev"),
}
#: Where they live: beside the PyPI MPIs' prefixes, inside the main venv.
ROOT = Path(sys.prefix) / "site"


def python(name: str) -> Path:
    return ROOT / name / "bin" / "python"


def missing(name: str) -> str:
    """Why venv *name* cannot be used (``""``: it can)."""
    mpicc, mpiexec, packages = SITES[name]
    if not (os.path.exists(mpicc) and os.path.exists(mpiexec)):
        return f"{mpicc} or {mpiexec} is missing: apt-get install {packages} (make test does, as root)"
    if not (ROOT / name / ".built").exists():
        return f"the venv {ROOT / name} is not built: {sys.executable} -m tests.site_venvs build {name}"
    return ""


def _cache() -> Path:
    from mpiworkbench.core.cbuild import cache_dir

    return cache_dir() / "site-mpi4py"


def _wheel(name: str, optimized: bool, builder: Path) -> Path:
    """mpi4py built against *name*'s MPI by the Python *builder*: from the cache, or built into it.

    *builder* is the new venv's own Python, before anything else is installed in it: a venv's
    ``include/`` is on every extension's include path, and the main venv's holds the ``mpich``
    wheel's ``mpi.h`` (MPICH 5), which would shadow the site's (an mpi4py built so asks its
    library for MPI 4.1 calls at import: ``undefined symbol: MPI_Buffer_iflush``)."""
    mpicc = SITES[name][0]
    shown = subprocess.run([mpicc, "-show"], capture_output=True, text=True, check=True).stdout
    flags = "" if optimized else "-O0"
    key = hashlib.sha256("\0".join([shown, version("mpi4py"), flags, sysconfig.get_platform(),
                                    sys.version]).encode()).hexdigest()[:16]
    directory = _cache() / f"{name}-{key}"
    found = sorted(directory.glob("mpi4py-*.whl"))
    if found:
        return found[0]
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent) as tmp:
        env = {**os.environ, "MPICC": mpicc}
        if flags:
            env["CFLAGS"] = flags
        subprocess.run([str(builder), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-binary",
                        "mpi4py", "--no-deps", "--no-cache-dir", "-w", tmp, f"mpi4py=={version('mpi4py')}"],
                       env=env, check=True)
        try:
            os.replace(tmp, directory)  # whole, or not at all
        except OSError:
            pass  # a concurrent build got there first: keep its wheel
        else:
            os.makedirs(tmp)  # for TemporaryDirectory's clean-up
    return sorted(directory.glob("mpi4py-*.whl"))[0]


def build(name: str, optimized: bool = False) -> Path:
    """Venv *name* (made once; rebuilt when its mpi4py wheel changes); returns its Python."""
    target = ROOT / name
    stamp = target / ".built"
    if stamp.exists() and Path(stamp.read_text()).exists():
        return python(name)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--clear", str(target)],
                   check=True)
    wheel = _wheel(name, optimized, python(name))
    pip = [str(python(name)), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    subprocess.run([*pip, str(wheel)], check=True)
    subprocess.run([*pip, f"mpich=={version('mpich')}"], check=True)
    own = subprocess.run([str(python(name)), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    main = sysconfig.get_path("purelib")
    # after the venv's own site-packages (addsitedir appends), with the .pth files of the main one
    # (the editable install of this project among them)
    Path(own, "zz-main-venv.pth").write_text(f"import site; site.addsitedir({main!r})\n")
    stamp.write_text(str(wheel))
    return python(name)


def main(argv: list[str]) -> int:
    if argv[:1] == ["python"] and len(argv) == 2:
        print(python(argv[1]))
        return 0
    if argv[:1] != ["build"]:
        print(__doc__, file=sys.stderr)
        return 2
    optimized = "--optimized" in argv
    names = [a for a in argv[1:] if not a.startswith("--")] or list(SITES)
    names = [n for n in names if os.path.exists(SITES[n][0])]
    with ThreadPoolExecutor(len(names) or 1) as pool:
        for built in pool.map(lambda n: build(n, optimized), names):
            print(f"site venv: {built}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
