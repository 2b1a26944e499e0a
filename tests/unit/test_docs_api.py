"""The API reference (``docs/api.md``) leaves no public name undocumented.

Public: every name in ``mpiworkbench.__all__``, every panel (``widgets``: ``*Panel``, ``*View``)
and solver handle (``client``: ``*Handle``), and the ``__all__`` of every module the page
documents with ``automodule``. Each must be on the page (directly, or through its module) and
have a docstring; so must every public method of the classes the page documents. The site's
build itself (Sphinx, warnings as errors, links and images checked in Chromium) is in
``tests/browser/test_docs_site.py``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import mpiworkbench

API = Path(__file__).resolve().parents[2] / "docs" / "api.md"
DIRECTIVE = re.compile(r"^\.\. auto(module|class|exception|function):: (\S+)", re.M)


def directives() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {"module": set(), "class": set(), "exception": set(), "function": set()}
    for kind, target in DIRECTIVE.findall(API.read_text()):
        found[kind].add(target)
    return found


def resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def public_classes(package: str, suffixes: tuple[str, ...]) -> set[str]:
    """``module.Class`` of every class defined in *package*'s modules whose name ends so."""
    pkg = importlib.import_module(package)
    names = set()
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"{package}.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__ and name.endswith(suffixes) \
                    and not name.startswith("_") and name not in ("LivePanel", "SteppingPanel", "SolverHandle"):  # bases
                names.add(f"{module.__name__}.{name}")
    return names


def documented() -> set[str]:
    """Every object the page documents, by its defining module and name (and as re-exported)."""
    found = directives()
    out = set()
    for kind in ("class", "exception", "function"):
        for target in found[kind]:
            obj = resolve(target)
            out |= {target, f"{obj.__module__}.{obj.__qualname__}"}
    for target in found["module"]:
        module = importlib.import_module(target)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            out.add(f"{target}.{name}")
            if hasattr(obj, "__qualname__") and hasattr(obj, "__module__"):
                out.add(f"{obj.__module__}.{obj.__qualname__}")
    return out


def test_every_public_name_is_on_the_api_page():
    public = {f"mpiworkbench.{name}" for name in mpiworkbench.__all__ if name != "__version__"}
    public |= public_classes("mpiworkbench.widgets", ("Panel", "View"))
    public |= public_classes("mpiworkbench.client", ("Handle",))
    missing = sorted(public - documented())
    assert not missing, f"public names missing from docs/api.md: {missing}"


def test_every_documented_name_has_a_docstring():
    found = directives()
    bare = []
    for target in found["module"]:
        module = importlib.import_module(target)
        assert module.__doc__, f"module {target} has no docstring"
        assert getattr(module, "__all__", None), f"{target} has no __all__: automodule would document nothing"
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj):
                bare.append(f"{target}.{name}")
    for kind in ("class", "exception", "function"):
        for target in found[kind]:
            obj = resolve(target)
            if not inspect.getdoc(obj):
                bare.append(target)
            if inspect.isclass(obj):
                for name, member in inspect.getmembers(obj):
                    if name.startswith("_") or not (inspect.isfunction(member) or isinstance(member, property)):
                        continue
                    if member.__doc__ is None or not member.__doc__.strip():
                        bare.append(f"{target}.{name}")
    assert not bare, f"documented in docs/api.md but without a docstring: {sorted(set(bare))}"
