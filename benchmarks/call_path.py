"""The path of one ``wb.run(f)`` through the runtime: every function of ``mpiworkbench`` the
notebook's thread enters, from the call to its return, in the order first entered, with the
module of each and the totals (named functions; comprehensions, generator expressions and
lambdas counted apart: they are expressions inside those functions).

Run on demand (not part of ``make test``)::

    .venv/bin/python benchmarks/call_path.py [--ranks 2] [--json FILE]

It starts a ``Workbench``, makes two calls first (the first one opens rank 0's relay and arms
the ranks' hang reports, once per engine set), then traces the third with ``sys.setprofile``.
Only the calling thread is traced: ipyparallel's I/O thread runs two functions of ours when the
reply comes in (giving the world's turn back and dropping the call from the histories), which
the calling thread also runs, whichever comes first. What the ranks run (``ranks/relay.py``) is
not in it: they run in other processes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Names Python gives the code objects of expressions.
EXPRESSIONS = ("<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")


def noop() -> int:
    return 1


def trace_one_run(wb, func=noop) -> list[tuple[str, str, int]]:
    """``(module, function, times entered)`` for each function of ``mpiworkbench`` that
    ``wb.run(func)`` enters on this thread, in the order first entered."""
    import mpiworkbench

    package = str(Path(mpiworkbench.__file__).parent)
    entered: dict[tuple[str, str], int] = {}

    def profile(frame, event, _arg):
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(package):
            key = (str(Path(code.co_filename).relative_to(package)), code.co_qualname)
            entered[key] = entered.get(key, 0) + 1

    sys.setprofile(profile)
    try:
        wb.run(func)
    finally:
        sys.setprofile(None)
    return [(module, name, times) for (module, name), times in entered.items()]


def summary(path: list[tuple[str, str, int]]) -> dict:
    named = [(m, f) for m, f, _ in path if not f.endswith(EXPRESSIONS)]
    return {"functions": len(named), "modules": len({m for m, _ in named}),
            "expressions": len(path) - len(named), "path": [list(p) for p in path]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2, help="the world's size")
    parser.add_argument("--json", help="write the path and the totals here too")
    args = parser.parse_args(argv)
    from mpiworkbench import Workbench

    with Workbench(n=args.ranks, oversubscribe=True, activate=False) as wb:
        wb.run(noop)
        wb.run(noop)
        found = summary(trace_one_run(wb))
    for module, name, times in found["path"]:
        kind = "  (expression)" if name.endswith(EXPRESSIONS) else ""
        print(f"{times:3d}× {module:32s} {name}{kind}")
    print(f"one wb.run: {found['functions']} functions in {found['modules']} modules of mpiworkbench "
          f"(and {found['expressions']} expressions), on the notebook's thread")
    if args.json:
        Path(args.json).write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
