"""The house rules, read from the code's own import statements (no module is imported here).

Imports only go down::

    cli, the Workbench facade, sidebar (the world sidebar's kernel side)
      → widgets → plot
      → drivers (one per feature)
        → client (the runtime: session, clusters, world, execution)
          → {speedup → (bench, solvers)}, bench, solvers, syntax
          → backends
            → core
    (all above) → lab (the lab part: ships alone, imports nothing of the package)

and no two modules import each other, directly or round a loop. Every ``import`` counts,
including the lazy ones inside functions: a lazy import that runs upward is still a tie
that runs upward. The engine-side core (everything below ``client``) never imports
ipyparallel, IPython or ipywidgets, so it runs the same under ``mpiexec`` and in engines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mpiworkbench"

#: What each part of the package may import (besides itself). A part is a subpackage or a
#: top-level module of ``mpiworkbench``. Parts not listed here fail the test: a new part
#: must be placed in the house on purpose.
ENGINE_SIDE = ("core", "backends", "bench", "solvers", "speedup", "syntax", "trace")
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    # the lab part (the world sidebar's server extension and its protocol): it ships alone, in a
    # lab's environment that has none of the rest, so it imports nothing; the worlds' writers use its protocol
    "lab": set(),
    "seeds": set(),  # the seed documents' printed numbers (data files + a loader): plots, panels, CLI
    "backends": {"core"},
    "bench": {"backends", "core"},
    "solvers": {"backends", "core"},
    "syntax": {"backends", "core"},
    # a traced speedup point records its run (trace/recorder) and keeps its POP factors (trace/efficiency)
    "speedup": {"trace", "bench", "solvers", "backends", "core"},
    # the MPI interposer and its readers: engine-side, beside the backends (needs only core)
    "trace": {"core"},
    "plot": {"trace", "speedup", "bench", "solvers", "syntax", "backends", "core", "seeds"},
    # the runtime: a session over the cluster, its world, calls, waits, turns and watchdog
    "client": {"lab", "trace", "speedup", "bench", "solvers", "syntax", "backends", "core"},
    # one driver per feature (bench, speedup, the solvers' handles, syntax lessons) over the runtime
    "drivers": {"lab", "jobs", "client", "trace", "speedup", "bench", "solvers", "syntax", "backends", "core"},
    "widgets": {"lab", "jobs", "trace", "drivers", "client", "plot", "speedup", "bench", "solvers", "syntax", "backends", "core", "seeds"},
    "workbench": {"lab", "jobs", "trace", "widgets", "drivers", "client", "plot", "speedup", "bench", "solvers", "syntax", "backends", "core", "seeds"},
    # the nbgrader course: the exercises, graded on a cluster the client layer attaches to
    "course": {"lab", "exercises", "client", "core"},
    "cli": {"deploy", "jobs", "lab", "sidebar", "course", "exercises", "trace", "workbench", "drivers", "client", "plot", "speedup", "bench", "solvers", "syntax", "backends", "core", "seeds"},
    # the world sidebar's kernel side: reads the worlds' files for the lab part (its reader process)
    # through the runtime's readers (client) and the ranks' records (trace); the sidebar's actions
    "sidebar": {"lab", "client", "trace", "core"},
    "exercises": set(),  # the notebooks' exercise checks: plain Python, no MPI
    # a session saved as a batch job: its format (layout) for the journal, the ranks' runner (the
    # engines' own code for a cell and a call: client.ranks) and the comparison
    "jobs": {"client", "trace", "core"},
    "deploy": set(),  # what a centre deploys beside the package (the Open OnDemand app): data files + a locator
    "__main__": {"cli"},
    "__init__": set(),  # the face: only lazy hand-offs to workbench/client (checked below)
}
FACE_MAY_HAND_OFF = {"workbench", "client"}
FOREIGN_FRONT_END = ("ipyparallel", "IPython", "ipywidgets", "ipykernel", "jupyter_client")


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if "snippets" in rel.parts or "listings" in rel.parts or "solutions" in rel.parts:
            continue  # code shown to learners or injected into notebooks, not part of the import graph
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    """Every module of mpiworkbench (or foreign top-level package) *path* imports."""
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names.add(full if full in MODULES else node.module)
    return names


GRAPH = {name: {i for i in _imports(path) if i in MODULES} for name, path in MODULES.items()}


def _part(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def test_every_part_is_placed_in_the_house():
    unplaced = sorted({_part(m) for m in MODULES} - set(MAY_IMPORT))
    assert not unplaced, f"parts with no place in the import order: {unplaced}; add them to MAY_IMPORT"


def test_imports_only_go_down():
    upward = []
    for module, targets in GRAPH.items():
        part = _part(module)
        for target in targets:
            other = _part(target)
            if other == part or other == "__init__":
                continue  # the package face (``__version__``, lazy hand-offs) is everyone's
            if part == "__init__":
                allowed = FACE_MAY_HAND_OFF
            else:
                allowed = MAY_IMPORT.get(part, set())
            if other not in allowed:
                upward.append(f"{module} imports {target} ({part} may import only {sorted(allowed)})")
    assert not upward, "imports that run up or sideways:\n" + "\n".join(sorted(upward))


def _cycles() -> list[list[str]]:
    # A package's face (its __init__) re-exports its own modules; a module importing its
    # own package's face is the same room, not a loop between rooms.
    def edges(module: str) -> set[str]:
        return {t for t in GRAPH[module] if not (module.startswith(t + ".") and t != module)}

    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges(v):
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles():
    cycles = _cycles()
    assert not cycles, "modules that import each other:\n" + "\n".join(" <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("part", ENGINE_SIDE)
def test_engine_side_never_imports_the_front_end(part):
    offenders = []
    for module, path in MODULES.items():
        if _part(module) != part:
            continue
        foreign = {name.split(".")[0] for name in _imports(path)}
        bad = sorted(foreign & set(FOREIGN_FRONT_END))
        if bad:
            offenders.append(f"{module}: {bad}")
    assert not offenders, f"engine-side modules importing the front end: {offenders}"


def test_the_rules_can_fail():
    """The checks above read real edges: a known downward edge is seen, an invented upward
    one would be reported."""
    assert "mpiworkbench.core.mpi" in GRAPH["mpiworkbench.backends.base"] or any(
        t.startswith("mpiworkbench.core") for t in GRAPH["mpiworkbench.backends.base"]
    )
    assert "client" not in MAY_IMPORT["core"]


#: A module longer than this is two rooms: split it along what it does.
MAX_MODULE_LINES = 500


def _longer_than(limit: int, within: str = "mpiworkbench") -> list[str]:
    """The modules under *within* with more than *limit* lines, with their length."""
    return sorted(f"{module}: {n} lines" for module, path in MODULES.items()
                  if module.startswith(within) and (n := len(path.read_text().splitlines())) > limit)


def test_no_module_is_longer_than_a_room():
    long = _longer_than(MAX_MODULE_LINES)
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


#: The runtime (``client``) is three rooms and what they share. A room imports its own modules,
#: the shared ones and the rooms named here: the session's calls build on the cluster's lifecycle
#: and ship the ranks' code; the cluster's room knows nothing of the calls; the code that runs
#: inside the ranks imports neither.
RUNTIME = "mpiworkbench.client"
RUNTIME_SHARED = {f"{RUNTIME}.{name}" for name in ("upstream", "errors", "history")} | {RUNTIME}
RUNTIME_ROOMS: dict[str, set[str]] = {"cluster": set(), "calls": {"cluster", "ranks"}, "ranks": set()}
#: No module of the runtime is longer than this: a newcomer reads one in a sitting.
MAX_RUNTIME_LINES = 400


def _room(module: str) -> str | None:
    """The runtime's room of *module* (``cluster``, ``calls``, ``ranks``), ``"shared"``, or None."""
    if module in RUNTIME_SHARED:
        return "shared"
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and module.startswith(RUNTIME + ".") else None


def test_every_module_of_the_runtime_is_in_a_room_or_shared():
    loose = sorted(m for m in MODULES if m.startswith(RUNTIME + ".") and _room(m) not in (*RUNTIME_ROOMS, "shared")
                   and m.split(".")[2] not in RUNTIME_ROOMS)
    assert not loose, f"modules of the runtime in no room: {loose}; move each to cluster/, calls/ or ranks/"


def test_the_runtimes_rooms_import_only_what_they_build_on():
    wrong = []
    for module, targets in GRAPH.items():
        room = _room(module)
        if room is None:
            continue
        allowed = RUNTIME_SHARED | {t for t in GRAPH if _room(t) in {room, *RUNTIME_ROOMS.get(room, ())}}
        if room == "shared":
            allowed = RUNTIME_SHARED
        wrong += [f"{module} ({room}) imports {target} ({_room(target)})" for target in sorted(targets)
                  if target.startswith(RUNTIME) and target not in allowed]
    assert not wrong, "imports between the runtime's rooms that run the wrong way:\n" + "\n".join(wrong)


def test_no_module_of_the_runtime_is_longer_than_a_sitting():
    long = _longer_than(MAX_RUNTIME_LINES, RUNTIME)
    assert not long, f"modules of the runtime over {MAX_RUNTIME_LINES} lines: {long}"


def test_the_room_rules_can_fail():
    assert _room("mpiworkbench.client.ranks.relay") == "ranks" and _room("mpiworkbench.client.errors") == "shared"
    assert "mpiworkbench.client.calls.session" in GRAPH and _room("mpiworkbench.client.calls.session") == "calls"
    assert "calls" not in RUNTIME_ROOMS["cluster"] and not RUNTIME_ROOMS["ranks"]


#: Imports of the package's own modules inside functions hide the import graph this file
#: guards; the few left are there for import cost or a cycle, and say so on their line.
MAX_INNER_IMPORTS = 60


def _inner_own_imports() -> list[tuple[str, int, str]]:
    found = set()
    for module, path in MODULES.items():  # the listings shown to learners are left out (see _modules)
        source = path.read_text()
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                own = (isinstance(inner, ast.ImportFrom) and (inner.level > 0 or (inner.module or "").startswith("mpiworkbench"))) or (
                    isinstance(inner, ast.Import) and any(a.name.startswith("mpiworkbench") for a in inner.names))
                if own:
                    found.add((module, inner.lineno, "\n".join(lines[inner.lineno - 1:inner.end_lineno])))
    return sorted(found)


def test_own_imports_sit_at_the_top_of_modules_or_say_why_not():
    inner = _inner_own_imports()
    assert len(inner) <= MAX_INNER_IMPORTS, (
        f"{len(inner)} imports of the package's own modules inside functions (at most {MAX_INNER_IMPORTS}): "
        "import at the top of the module")
    silent = [f"{module}:{line}" for module, line, text in inner if "#" not in text]
    assert not silent, f"imports inside functions without a reason on their line (import cost, a cycle): {silent}"


def test_every_python_file_of_the_package_compiles():
    """pip byte-compiles the package on install and linters parse it: every ``.py`` must be
    Python (the exercise solutions too: their IPython magics are commented, Jupytext-style)."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        try:
            ast.parse(path.read_text(), filename=str(path))
        except SyntaxError as exc:
            bad.append(f"{path.relative_to(PACKAGE)}:{exc.lineno}: {exc.msg}")
    assert not bad, bad
