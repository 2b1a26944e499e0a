"""Engine-side registry of the stateful objects a notebook drives (solvers, benchmarks).

The notebook's :class:`~mpiworkbench.session.RemoteObject` asks every engine to
:func:`create` an object from a factory path (``"package.module:Class"``), then to
:func:`call` its methods. The objects live here, in the engines, between calls; they
communicate with MPI among themselves and only small results travel back to the client.
This module imports neither ipyparallel nor IPython.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

_objects: dict[str, Any] = {}


def resolve(path: str) -> Callable[..., Any]:
    """Import ``"package.module:attr"`` and return the attribute."""
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ValueError(f"factory path must look like 'package.module:Name'; got {path!r}")
    return getattr(importlib.import_module(module_name), attr)


def create(key: str, factory: str, args: tuple, kwargs: dict) -> None:
    """Build ``factory(*args, **kwargs)`` on this rank and keep it under *key*."""
    _objects.pop(key, None)
    _objects[key] = resolve(factory)(*args, **kwargs)


def get(key: str) -> Any:
    try:
        return _objects[key]
    except KeyError:
        raise KeyError(
            f"no object {key!r} on this engine; it was deleted or the engines were "
            "restarted — create it again"
        ) from None


def call(key: str, method: str, args: tuple, kwargs: dict) -> Any:
    """Call ``obj.method(*args, **kwargs)`` on this rank's object *key*."""
    return getattr(get(key), method)(*args, **kwargs)


def attribute(key: str, name: str) -> Any:
    return getattr(get(key), name)


def delete(key: str) -> None:
    obj = _objects.pop(key, None)
    close = getattr(obj, "close", None)
    if callable(close):
        close()
