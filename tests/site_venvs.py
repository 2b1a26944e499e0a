"""Venvs whose mpi4py is built from source against a site's MPI: the suite's stand-ins for a
cluster's MPI (``site``, :mod:`mpiworkbench.core.sitempi`).

Three MPIs stand in, side by side on one machine as on a cluster: Debian's Open MPI and Debian's
MPICH (system packages), and Intel MPI as a centre's environment module holds it: installed into
a prefix of its own (``pip install --prefix P impi-rt impi-devel``, the wheels ``make test``
fetches for ``.venv/mpi/impi``), "loaded" with the variables its module sets (``I_MPI_ROOT``,
``PATH``, ``LD_LIBRARY_PATH``, ``LIBRARY_PATH``, ``FI_PROVIDER_PATH``: :meth:`Site.loaded`).

Each venv is what a user on a cluster makes (``module load …``; ``MPICC=$(command -v mpicc) pip
install --no-binary mpi4py mpi4py``; then the project), with two economies for the suite:

* the project's other dependencies come from the main venv: a ``.pth`` file adds its
  ``site-packages`` *after* the venv's own, so the venv's own mpi4py wins;
* the mpi4py wheel built for each MPI is kept in the cache (``$MPIWORKBENCH_CACHE``, like every
  C library of the project), keyed by the MPI's ``mpicc -show``, mpi4py's version and the flags,
  and compiled at ``-O0`` (35 s instead of 5 minutes on a loaded 2-core machine: these venvs check
  that every part works, they measure nothing; ``--optimized`` builds with mpi4py's own flags).

The ``mpich`` wheel is installed in the Debian ones as well, as ``pip install`` of this project did
before it became an extra: the site's detection must pass over its ``mpiexec`` beside the
interpreter. The Intel one is made as the README's "On a cluster" says, without it.

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
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from mpiworkbench.core import implementations

#: Where they live: beside the PyPI MPIs' prefixes, inside the main venv.
ROOT = Path(sys.prefix) / "site"
#: Where the module-style MPIs are installed (each a prefix of its own, as a module tree holds them).
MODULES = ROOT / "modules"


@dataclass(frozen=True)
class Site:
    """One MPI standing in for a site's: its ``mpicc`` and ``mpiexec`` (what the user's shell finds
    after loading it), and how it is installed: Debian *packages*, or pip *requirements* into a
    module-style prefix (then :meth:`loaded` sets the variables its module file would)."""

    mpicc: str
    mpiexec: str
    packages: str = ""
    requirements: tuple[str, ...] = ()
    #: Whether the venv also has the ``mpich`` wheel (as ``pip install`` of the project brought it
    #: before it became an extra; the Intel venv is made as the README's "On a cluster" says, without).
    wheel_mpich: bool = True

    @property
    def prefix(self) -> Path:
        return Path(self.mpicc).parent.parent

    def loaded(self, env: dict[str, str]) -> dict[str, str]:
        """*env* after ``module load`` of this MPI (unchanged for a distribution's)."""
        if not self.requirements:
            return dict(env)
        prefix, lib = str(self.prefix), str(self.prefix / "lib")

        def before(name: str, *first: str) -> str:
            return os.pathsep.join([*first, *[p for p in env.get(name, "").split(os.pathsep) if p]])

        return {**env, "I_MPI_ROOT": prefix, "PATH": before("PATH", str(self.prefix / "bin"), str(self.prefix / "bin" / "libfabric")),
                "LD_LIBRARY_PATH": before("LD_LIBRARY_PATH", lib), "LIBRARY_PATH": before("LIBRARY_PATH", lib),
                "FI_PROVIDER_PATH": lib}

    def missing(self) -> str:
        if os.path.exists(self.mpicc) and os.path.exists(self.mpiexec):
            return ""
        if self.requirements:
            return f"{self.mpicc} is missing: {sys.executable} -m tests.site_venvs build (make test does)"
        return f"{self.mpicc} or {self.mpiexec} is missing: apt-get install {self.packages} (make test does, as root)"


_IMPI = Path(MODULES / "impi")
#: The MPIs standing in for a site's, by the name of their venv.
SITES = {
    "debian-openmpi": Site("/usr/bin/mpicc.openmpi", "/usr/bin/mpiexec.openmpi", "openmpi-bin libopenmpi-dev"),
    "debian-mpich": Site("/usr/bin/mpicc.mpich", "/usr/bin/mpiexec.mpich", "mpich libmpich-dev"),
    # the same packages as the suite's PyPI Intel MPI (one fact: mpiworkbench.core.implementations)
    "intel-impi": Site(str(_IMPI / "bin" / "mpicc"), str(_IMPI / "bin" / "mpiexec"),
                       requirements=implementations.get("impi").packages, wheel_mpich=False),
}


def python(name: str) -> Path:
    return ROOT / name / "bin" / "python"


def missing(name: str) -> str:
    """Why venv *name* cannot be used (``""``: it can)."""
    why = SITES[name].missing()
    if why:
        return why
    if not (ROOT / name / ".built").exists():
        return f"the venv {ROOT / name} is not built: {sys.executable} -m tests.site_venvs build {name}"
    return ""


def install_module(name: str) -> None:
    """Install a module-style MPI into its prefix (from pip's cache after ``make install-mpis``)."""
    site = SITES[name]
    if not site.requirements or not site.missing():
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    "--prefix", str(site.prefix), *site.requirements], check=True)


def _cache() -> Path:
    from mpiworkbench.core.cache import cache_dir

    return cache_dir() / "site-mpi4py"


def _wheel(name: str, optimized: bool, builder: Path) -> Path:
    """mpi4py built against *name*'s MPI by the Python *builder*: from the cache, or built into it.

    *builder* is the new venv's own Python, before anything else is installed in it: a venv's
    ``include/`` is on every extension's include path, and the main venv's holds the ``mpich``
    wheel's ``mpi.h`` (MPICH 5), which would shadow the site's (an mpi4py built so asks its
    library for MPI 4.1 calls at import: ``undefined symbol: MPI_Buffer_iflush``)."""
    site = SITES[name]
    mpicc, loaded = site.mpicc, site.loaded(dict(os.environ))
    shown = subprocess.run([mpicc, "-show"], capture_output=True, text=True, check=True, env=loaded).stdout
    flags = "" if optimized else "-O0"
    key = hashlib.sha256("\0".join([shown, version("mpi4py"), flags, sysconfig.get_platform(),
                                    sys.version]).encode()).hexdigest()[:16]
    directory = _cache() / f"{name}-{key}"
    found = sorted(directory.glob("mpi4py-*.whl"))
    if found:
        return found[0]
    directory.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory.parent) as tmp:
        env = {**loaded, "MPICC": mpicc}
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
    install_module(name)
    target = ROOT / name
    stamp = target / ".built"
    if stamp.exists() and Path(stamp.read_text()).exists():
        return python(name)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--clear", str(target)],
                   check=True)
    wheel = _wheel(name, optimized, python(name))
    pip = [str(python(name)), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
    subprocess.run([*pip, str(wheel)], check=True)
    if SITES[name].wheel_mpich:
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
    for name in names:
        install_module(name)
    names = [n for n in names if not SITES[n].missing()]
    with ThreadPoolExecutor(len(names) or 1) as pool:
        for built in pool.map(lambda n: build(n, optimized), names):
            print(f"site venv: {built}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
