"""The one list of backends: names, where each lives, and how its timed loops are found.

Every other list of backend names in mpiworkbench (CLI choices, default columns, the
backends a solver accepts) is a call to a function here, so a backend is added, renamed
or dropped in one place. Order = column order of every side-by-side table: C first.

Importing this module imports neither mpi4py nor numba: a backend's module is imported
on first use (:func:`backend_class`), and a backend that cannot load here raises
:class:`~mpiworkbench.backends.base.BackendUnavailableError` saying why and what to do.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any

from mpiworkbench.backends import api_loops
from mpiworkbench.backends.base import OPERATIONS, Backend, BackendUnavailableError, Loop


@dataclass(frozen=True)
class Entry:
    """One registered backend.

    ``target`` is ``"module:Class"`` of its :class:`~mpiworkbench.backends.base.Backend`
    subclass, or ``None`` for a backend that is listed but has no implementation here
    (then ``missing`` says why). ``install`` is what to install when the import fails.
    ``any_communicator`` is ``False`` for a backend bound to ``MPI_COMM_WORLD``.
    """

    name: str
    target: str | None
    install: str
    optional: bool = False
    any_communicator: bool = True
    missing: str = ""


#: Every backend, C first (the reference the thesis measured every module against).
ENTRIES: tuple[Entry, ...] = (
    Entry("c", "mpiworkbench.backends.c.backend:CBackend", "pip install mpich (for mpicc) and a C compiler"),
    Entry("mpi4py-obj", "mpiworkbench.backends.mpi4py.obj:Mpi4pyObject", "pip install mpi4py mpich"),
    Entry("mpi4py-buf", "mpiworkbench.backends.mpi4py.buf:Mpi4pyBuffer", "pip install mpi4py mpich"),
    Entry("numba-mpi", "mpiworkbench.backends.numba_mpi.backend:NumbaMpi", "pip install numba numba-mpi",
          any_communicator=False),
    Entry("mpi4jax", "mpiworkbench.backends.mpi4jax.backend:Mpi4jax",
          "make install-mpi4jax (pip install 'mpiworkbench[mpi4jax]', then mpi4jax built with "
          "--no-build-isolation; the Makefile shows how)", optional=True),
)
_BY_NAME: dict[str, Entry] = {e.name: e for e in ENTRIES}

#: ``api:<name>``: backend *name* timed through the unified interface (its wrapper cost).
API_PREFIX = "api:"

#: The five historic modules of the thesis (Python 2 era; syntax tables and emulations in
#: :mod:`mpiworkbench.syntax.historic`, which reads its names from here), thesis order.
HISTORIC_NAMES: tuple[str, ...] = ("pypar", "pyMPI", "Scientific.MPI", "MYMPI", "boostmpi")

_classes: dict[str, type[Backend]] = {}


def backend_names() -> list[str]:
    """Every backend the registry lists (implemented here or not), C first.

    Returns
    -------
    list of str
    """
    return [e.name for e in ENTRIES]


def implemented_names(any_communicator: bool = False) -> list[str]:
    """The backends with an implementation here, C first (optional, absent ones left out).

    Parameters
    ----------
    any_communicator : bool
        Only those that run on any communicator (leaves out numba-mpi, bound to
        ``MPI_COMM_WORLD``).

    Returns
    -------
    list of str
    """
    return [e.name for e in ENTRIES
            if e.target and (e.any_communicator or not any_communicator) and _installed(e)]


def _package(entry: Entry) -> str:
    """The importable package an optional backend needs (its name, ``-`` → ``_``)."""
    return entry.name.replace("-", "_")


def _installed(entry: Entry) -> bool:
    """Whether an optional backend's package is installed (looked up, not imported)."""
    return not entry.optional or importlib.util.find_spec(_package(entry)) is not None


def bench_names() -> list[str]:
    """Every name a benchmark accepts: each backend, then ``api:<name>`` for each.

    Returns
    -------
    list of str
    """
    return backend_names() + [API_PREFIX + n for n in backend_names()]


def historic_names() -> list[str]:
    """The five historic modules of the thesis (syntax tables and emulations only).

    Returns
    -------
    list of str
        Thesis order; none of them is a backend here.
    """
    return list(HISTORIC_NAMES)


def _check_name(name: str) -> Entry:
    entry = _BY_NAME.get(name)
    if entry is None:
        historic = ""
        if name in HISTORIC_NAMES:
            historic = (
                f"; {name} is a historic (Python 2) module: its syntax and an emulation "
                "live in mpiworkbench.syntax.historic"
            )
        raise ValueError(f"unknown backend {name!r}; choose one of {backend_names()}{historic}")
    return entry


def _unavailable(entry: Entry) -> BackendUnavailableError:
    """Why a listed backend without an implementation here cannot be used."""
    package = _package(entry)
    if importlib.util.find_spec(package) is None:
        return BackendUnavailableError(
            f"backend {entry.name!r} is unavailable here: the optional package {package} is not "
            f"installed ({entry.install}); mpiworkbench never requires it"
        )
    return BackendUnavailableError(f"backend {entry.name!r} is unavailable: {package} is installed, but {entry.missing}")


def backend_class(name: str) -> type[Backend]:
    """Import and return the class of backend *name* (imported once, then kept).

    Parameters
    ----------
    name : str
        A registry name (:func:`backend_names`).

    Returns
    -------
    type
        The :class:`~mpiworkbench.backends.base.Backend` subclass.

    Raises
    ------
    ValueError
        For an unknown name (naming the historic modules when it is one of them).
    BackendUnavailableError
        When the backend cannot load here, or has no implementation here, with why.
    """
    entry = _check_name(name)
    cls = _classes.get(name)
    if cls is None:
        if entry.target is None:
            raise _unavailable(entry)
        module_name, attr = entry.target.split(":")
        try:
            module = importlib.import_module(module_name)
        except BackendUnavailableError:
            raise
        except ImportError as exc:
            raise BackendUnavailableError(
                f"backend {name!r} is unavailable here: {exc}; to use it: {entry.install}"
            ) from exc
        cls = _classes[name] = getattr(module, attr)
    return cls


def get_backend(name: str, comm=None) -> Backend:
    """The backend *name* over *comm*.

    Parameters
    ----------
    name : str
        A registry name (:func:`backend_names`).
    comm : mpi4py.MPI.Comm, optional
        The communicator (``None``: ``COMM_WORLD``).

    Returns
    -------
    Backend
        Over *comm*, ready to call.

    Raises
    ------
    ValueError
        For an unknown name.
    BackendUnavailableError
        When the backend cannot load here.
    NotSupportedError
        When it cannot use *comm* (numba-mpi off the world).
    """
    return backend_class(name)(comm)


def timed_loop(backend: str, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
    """The timed loop of *benchmark* on *backend*: the one way to a backend's loops.

    A backend name gets the backend's own loops (:meth:`Backend.make_loop`); ``api:<name>``
    gets the generic loops over the unified interface on that backend
    (:mod:`mpiworkbench.backends.api_loops`).

    Parameters
    ----------
    backend : str
        A registry name or ``api:<name>`` (:func:`bench_names`).
    benchmark, comm, mode, window
        As :meth:`Backend.make_loop`, which says what the loop returns.

    Raises
    ------
    ValueError, BackendUnavailableError, NotSupportedError
        As :func:`backend_class` and :meth:`Backend.make_loop`.
    """
    if backend.startswith(API_PREFIX):
        return api_loops.loop_over(get_backend(backend[len(API_PREFIX):], comm), benchmark, mode, window)
    return backend_class(backend).make_loop(benchmark, comm, mode, window)


def is_available(name: str) -> bool:
    """Whether backend *name* can be loaded here (does not build or compile anything).

    Parameters
    ----------
    name : str
        A registry name.

    Returns
    -------
    bool
        ``False`` when it raises :class:`BackendUnavailableError` (``ValueError`` for an
        unknown name propagates).
    """
    try:
        backend_class(name)
    except BackendUnavailableError:
        return False
    return True


def capabilities(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """What each backend can do, from the backend classes themselves.

    Parameters
    ----------
    names : list of str, optional
        Registry names (default: all of them, C first).

    Returns
    -------
    dict
        ``{name: {"available": bool, "reason": str | None, "summary": str, "objects":
        bool, "limits": [...], "ops": {op: None | reason}}}``: ``ops[op]`` is ``None``
        when the operation is supported, else why not.
    """
    table: dict[str, dict[str, Any]] = {}
    for name in names or backend_names():
        try:
            cls = backend_class(name)
        except BackendUnavailableError as exc:
            table[name] = {
                "available": False,
                "reason": str(exc),
                "summary": "",
                "objects": False,
                "limits": [],
                "ops": {op: "backend unavailable here" for op in OPERATIONS},
            }
            continue
        table[name] = {
            "available": True,
            "reason": None,
            "summary": cls.summary,
            "objects": cls.objects,
            "limits": list(cls.limits),
            "ops": {op: cls.unsupported.get(op) for op in OPERATIONS},
        }
    return table


def environment(comm=None) -> dict[str, Any]:
    """Collective: the machine snapshot of *comm*'s world (:func:`mpiworkbench.core.machine.capture`,
    no load sampling), under ``"backends"`` :func:`availability` and under ``"implementations"``
    which MPI implementations are installed (:func:`mpiworkbench.core.usable.status`) —
    what ``mpiworkbench info`` prints and the control panel shows."""
    from mpiworkbench.core import machine, usable  # lazy: machine imports importlib.metadata and core.launch; only this snapshot needs them, not every rank

    env = machine.capture(comm, measure_load=False)
    env["backends"] = availability()
    env["implementations"] = usable.status()
    return env


def availability() -> dict[str, Any]:
    """Whether every registered backend loads here (what ``mpiworkbench info`` and the
    control panel show beside the machine snapshot).

    Returns
    -------
    dict
        ``{backend: True}`` or ``{backend: "unavailable: why"}``, C first.
    """
    return {
        name: True if row["available"] else f"unavailable: {row['reason']}"
        for name, row in capabilities().items()
    }
