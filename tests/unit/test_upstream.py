"""The private names of ipyparallel, ipykernel, jupyter_client and IPython the runtime reaches are
all in one module (``mpiworkbench/client/upstream.py``), the installed packages still have each,
and ``pyproject.toml`` bounds those packages to the minor versions the suite runs against."""

from __future__ import annotations

import ast
from concurrent.futures import Future
import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from mpiworkbench.client import upstream

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mpiworkbench"
HOOKS_MODULE = PACKAGE / "client" / "upstream.py"
#: Private names of the standard library and mpi4py the package uses on purpose (documented there).
FOREIGN_ALLOWED = {("sys", "_getframe"), ("sys", "_current_frames"), ("os", "_exit"), ("MPI", "_sizeof")}
#: The packages whose private names the hooks reach, bounded in pyproject.toml.
BOUNDED = ("ipyparallel", "ipykernel", "jupyter_client", "ipython")


def _sources() -> dict[Path, ast.AST]:
    return {path: ast.parse(path.read_text(), str(path)) for path in sorted(PACKAGE.rglob("*.py"))}


def _ours(trees) -> set[str]:
    """Every private name the package itself defines: functions, classes, arguments, names and
    attributes it assigns (outside the hooks module, which assigns upstream's)."""
    names: set[str] = set()
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and path != HOOKS_MODULE:
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[-1])
    return {name for name in names if name.startswith("_")}


def test_no_module_but_the_hooks_module_reaches_a_private_name_of_upstream():
    trees = _sources()
    ours = _ours(trees)
    reached = []
    for path, tree in trees.items():
        if path == HOOKS_MODULE:
            continue
        for node in ast.walk(tree):
            name, base = None, None
            if isinstance(node, ast.Attribute):
                name, base = node.attr, ast.unparse(node.value)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2
                  and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
                name, base = node.args[1].value, ast.unparse(node.args[0])
            if (name and name.startswith("_") and not name.startswith("__") and name not in ours
                    and (base, name) not in FOREIGN_ALLOWED):
                reached.append(f"{path.relative_to(ROOT)}:{node.lineno}: {base}.{name}")
    assert not reached, ("private names of other packages reached outside mpiworkbench/client/upstream.py "
                         "(add a hook there, with why):\n" + "\n".join(reached))


def test_every_hook_is_a_function_of_the_hooks_module_and_reaches_its_name():
    source = HOOKS_MODULE.read_text()
    tree = ast.parse(source)
    functions = {node.name: ast.unparse(node) for node in tree.body if isinstance(node, ast.FunctionDef)}
    for hook in upstream.HOOKS:
        assert hook.used_by in functions, f"{hook.used_by} is not a function of upstream.py"
        assert hook.name in functions[hook.used_by], f"upstream.{hook.used_by} does not reach {hook.name}"


def test_the_installed_packages_have_every_private_name_the_hooks_reach():
    assert upstream.moved() == []


def test_a_hook_whose_name_moved_is_named_with_the_function_using_it():
    gone = upstream.Hook("ipyparallel.client.asyncresult:AsyncResult", "_no_such_name", "targets", "a test")
    [message] = upstream.moved((gone, *upstream.HOOKS[:2]))
    version = importlib.metadata.version("ipyparallel")
    assert message.startswith(f"ipyparallel {version}: ipyparallel.client.asyncresult.AsyncResult._no_such_name is gone")
    assert "mpiworkbench.client.upstream.targets" in message
    run = subprocess.run([sys.executable, "-m", "mpiworkbench.client.upstream"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and f"all {len(upstream.HOOKS)} private names" in run.stdout, run.stdout + run.stderr


def test_pyproject_bounds_the_hooked_packages_to_the_installed_minor_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(text) for text in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        requirements += [Requirement(text) for text in extra if not text.startswith("mpiworkbench")]
    for package in BOUNDED:
        found = [r for r in requirements if r.name.replace("-", "_") == package]
        assert found, f"pyproject.toml does not name {package}"
        for requirement in found:
            installed = importlib.metadata.version(package)
            assert requirement.specifier.contains(installed), f"{requirement} excludes the installed {installed}"
            assert any(spec.operator == "<" for spec in requirement.specifier), f"{requirement} has no upper bound"


def test_no_object_of_upstream_gets_an_attribute_of_ours():
    """A call is a :class:`~mpiworkbench.client.calls.call.Call` of ours, state lives in the
    session's connection: nothing sets a ``_wb_…`` attribute on an object (the mark the runtime
    once put on ipyparallel's results, kernels and classes) or stashes state in an object's
    ``__dict__``."""
    found = []
    for path, tree in _sources().items():
        for node in ast.walk(tree):
            stored = (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr.startswith("_wb_"))
            stashed = (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
                       and isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__")
            set_by_name = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                           and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                           and str(node.args[1].value).startswith("_wb_"))
            if stored or stashed or set_by_name:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    assert not found, "attributes of ours set on other objects:\n" + "\n".join(found)


def test_every_object_patched_in_place_is_named_by_the_function_patching_it():
    """Each entry of ``PATCHED`` names a function of the runtime whose source reaches that name
    (so that a patch added elsewhere, or one removed, shows here), and the installed packages
    have it (:func:`upstream.moved` checks ``PATCHED`` too)."""
    import importlib
    import inspect

    for hook in upstream.PATCHED:
        module, _, function = f"mpiworkbench.client.{hook.used_by}".rpartition(".")
        source = inspect.getsource(getattr(importlib.import_module(module), function))
        assert hook.name in source, f"{hook.used_by} does not reach {hook.owner}.{hook.name}"
    assert not upstream.moved(upstream.PATCHED)


def test_a_client_that_missed_a_registration_catches_up_and_its_waiters_hear_of_it():
    """A client that connected while engines registered missed the notification of one (ZeroMQ's
    subscription not yet in place): asked of the hub, the engine is taken as its notification would
    take it (ipyparallel's own ``_register_engine`` and ``_update_engines`` run here), once."""
    from ipyparallel import Client

    class Missed:
        _register_engine = Client._register_engine
        _update_engines = Client._update_engines

        def __init__(self):
            self._engines, self._ids, self._task_scheme, self._task_socket = {0: "a", 2: "c"}, [0, 2], "leastload", None
            self._query_stream, self.heard, self.asked = object(), [], []
            self._registration_callbacks = [self.heard.append]

        def _send(self, stream, msg_type):
            self.asked.append((stream is self._query_stream, msg_type))
            reply = Future()
            reply.set_result({"content": {"engines": {"0": "a", "1": "b", "2": "c"}}})
            return reply

    client = Missed()
    upstream.catch_up_registrations(client)
    assert client.asked == [(True, "connection_request")]
    assert client._ids == [0, 1, 2] and client._engines[1] == "b"
    assert [(e["event"], e["id"]) for e in client.heard] == [("register", 1)]
    upstream.catch_up_registrations(client)  # nothing missed: nothing told again
    assert len(client.heard) == 1
    client._send = lambda stream, msg_type: Future()  # a stalled hub: nothing learnt, no hang
    upstream.catch_up_registrations(client, timeout=0.1)
    assert client._ids == [0, 1, 2]
