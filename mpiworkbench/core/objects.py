"""Engine-side registry of the stateful objects a notebook drives (solvers, benchmarks).

The notebook's :class:`~mpiworkbench.client.RemoteObject` asks every engine to
:func:`create` an object from a factory path (``"package.module:Class"``), then to
:func:`call` its methods. The objects live here, in the engines, between calls; they
communicate with MPI among themselves and only small results travel back to the client.
This module imports neither ipyparallel nor IPython.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from mpiworkbench.core import mpi

_objects: dict[str, Any] = {}
#: Keys created with ``nranks`` on which this rank deliberately holds nothing.
_absent: set[str] = set()


def resolve(path: str) -> Callable[..., Any]:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ValueError(f"factory path must look like 'package.module:Name'; got {path!r}")
    return getattr(importlib.import_module(module_name), attr)


def lazy_exports(package: str, where: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package face's ``__getattr__`` and ``__dir__`` that import each name on first use.

    Parameters
    ----------
    package
        The package's ``__name__``.
    where
        Exported name → the submodule (relative to *package*) that defines it.

    Returns
    -------
    tuple
        ``(__getattr__, __dir__)`` for the package's namespace (PEP 562), so importing the
        package (or one light submodule of it) does not import the heavy ones.
    """

    def __getattr__(name: str) -> Any:
        if name in where:
            return getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__


def create(key: str, factory: str, args: tuple, kwargs: dict, nranks: int | None = None) -> bool:
    """Build ``factory(*args, comm=…, **kwargs)`` on this rank and keep it under *key*.

    With *nranks*, only world ranks ``0 … nranks-1`` take part: they get a
    sub-communicator of that size (split collectively from ``COMM_WORLD``) and the
    other ranks hold nothing. This is how speedup experiments run a 1-rank point on a
    2-rank cluster without restarting it. Returns whether this rank holds an object.
    """
    delete(key)
    if nranks is not None:
        world = mpi.world()
        if not 1 <= nranks <= world.size:
            raise ValueError(f"nranks must be between 1 and {world.size}; got {nranks}")
        color = 0 if world.rank < nranks else mpi.MPI().UNDEFINED
        comm = world.Split(color, world.rank)
        if comm == mpi.MPI().COMM_NULL:
            _absent.add(key)
            return False
        kwargs = {**kwargs, "comm": comm}
    _objects[key] = resolve(factory)(*args, **kwargs)
    return True


def get(key: str) -> Any:
    try:
        return _objects[key]
    except KeyError:
        raise KeyError(
            f"no object {key!r} on this engine; it was deleted or the engines were "
            "restarted — create it again"
        ) from None


def call(key: str, method: str, args: tuple, kwargs: dict) -> Any:
    """Call ``obj.method(*args, **kwargs)`` on this rank's object *key*.

    Ranks that hold no object (outside an ``nranks`` sub-communicator) return ``None``.
    """
    if key not in _objects and key in _absent:
        return None
    return getattr(get(key), method)(*args, **kwargs)


def call_many(key: str, calls: list[tuple[str, tuple]]) -> list[Any]:
    """:func:`call` each ``(method, args)`` of *calls* in order; every result, in a list.

    One engine task for several calls: a live panel's frame (steps, then the gathered
    picture) costs one round trip, not one per call.
    """
    return [call(key, method, args, {}) for method, args in calls]


def attribute(key: str, name: str) -> Any:
    if key not in _objects and key in _absent:
        return None
    return getattr(get(key), name)


def delete(key: str) -> None:
    _absent.discard(key)
    obj = _objects.pop(key, None)
    close = getattr(obj, "close", None)
    if callable(close):
        close()
