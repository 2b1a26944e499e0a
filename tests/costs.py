"""What a test costs: ``@pytest.mark.cost(seconds, why)``, and the modules ordered by it.

A test says how long it takes on the 2-core machine the suite is budgeted for, with the marker on
the test, or in its module's ``pytestmark`` for the whole module (its shared fixtures included).
Above :data:`~tests.timetable.COST_WHY_S` seconds it must also say why it must be that long:
collection fails otherwise, naming the test. The time table ``make test`` prints lists the tests
that took longer than that without declaring it (``docs/architecture.md``, "What a test costs").

Collection orders the modules by what they declare, heaviest first, so that pytest-xdist's workers
(``--dist loadfile --no-loadscope-reorder``: ``tests/timetable.py``) start on the long ones and
finish together; a module's own order is kept, and the leftover checks (``test_zz_*``) stay last.
``tests/conftest.py`` installs the hook; ``-p tests.costs`` does elsewhere.

**The suite's two forms** (as SciPy's ``fast`` and ``full`` test modes): ``make test``, what CI runs,
is the fast form, inside the suite's budget; ``make test-full``
(:data:`~tests.timetable.FULL_VAR` set) the full form.
The fast form proves every behaviour; the full form proves some of them again, many times or at
more sizes: the rounds a wedge once needed to show itself, the same path under one more MPI. A test
chooses its counts with :func:`fast_or_full`, and a test that only repeats a proof of the fast form
is marked ``@pytest.mark.full("what it adds")``: the fast form deselects it (its time table says how
many). ``docs/architecture.md`` ("The suite's two forms") lists what the full form adds.
"""

from __future__ import annotations

from typing import TypeVar

import pytest

from tests.timetable import COST_WHY_S, full_form

#: Whether this run is the suite's full form.
FULL = full_form()

T = TypeVar("T")


def fast_or_full(fast: T, full: T) -> T:
    """*full* in the suite's full form, else *fast*: a test's rounds, sizes or cases."""
    return full if FULL else fast


#: What a test that declares no cost is taken to cost when ordering the modules.
UNDECLARED_COST_S = 1.0
#: nodeid -> (declared seconds, why) of the tests collected in this process (for the time table).
DECLARED_COSTS: dict[str, tuple[float, str]] = {}
#: The tests collected in this process that only the full form runs (the fast form deselected them).
FULL_ONLY: list[str] = []


def _module_mark(module) -> "pytest.Mark | None":
    marks = getattr(module, "pytestmark", [])
    for mark in marks if isinstance(marks, list) else [marks]:
        if mark.name == "cost":
            return mark
    return None


def _full_only(item) -> bool:
    """Whether *item* runs in the full form only (``pytest.mark.full("what it adds")``, which must
    say what it adds)."""
    mark = item.get_closest_marker("full")
    if mark is None:
        return False
    if not (mark.args and isinstance(mark.args[0], str) and mark.args[0].strip()):
        raise pytest.UsageError(f"{item.nodeid}: pytest.mark.full takes what the test adds to the fast form's "
                                f"proofs (a sentence); got {mark.args!r}")
    return True


def _cost_of(mark: "pytest.Mark") -> tuple[float, str]:
    seconds = mark.args[0] if mark.args else mark.kwargs.get("seconds")
    why = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("why", "")
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise pytest.UsageError(f"pytest.mark.cost takes the seconds a test costs first (a positive number); "
                                f"got {mark.args!r}")
    return float(seconds), why or ""


def pytest_collection_modifyitems(config, items):
    repeats = [item for item in items if _full_only(item)]
    FULL_ONLY[:] = [item.nodeid for item in repeats]
    if repeats and not FULL:
        config.hook.pytest_deselected(items=repeats)
        items[:] = [item for item in items if item not in repeats]
    per_file: dict[str, float] = {}
    module_marks: dict[str, "pytest.Mark | None"] = {}  # read once per module, not per test
    for item in items:
        file = str(item.path)
        if file not in module_marks:
            module_marks[file] = _module_mark(getattr(item, "module", None))
        module = module_marks[file]
        own = next((m for m in item.own_markers if m.name == "cost"), None)
        for mark, where in ((module, f"module {item.path.name}"), (own, item.nodeid)):
            if mark is None:
                continue
            seconds, why = _cost_of(mark)
            if seconds > COST_WHY_S and not why.strip():
                raise pytest.UsageError(f"{where} costs {seconds:.0f} s (more than {COST_WHY_S} s) but does not say "
                                        "why it must be that long: pytest.mark.cost(SECONDS, \"why\")")
            DECLARED_COSTS[item.nodeid] = (seconds, why)
        if file not in per_file:
            per_file[file] = _cost_of(module)[0] if module is not None else 0.0
        if own is not None:
            per_file[file] += _cost_of(own)[0]
        elif module is None:
            per_file[file] += UNDECLARED_COST_S
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (item.path.name.startswith("test_zz_"), -per_file[str(item.path)],
                                 str(item.path), order[id(item)]))
