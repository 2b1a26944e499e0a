"""``mpiworkbench exercises --student DIR --solutions DIR``: the teachers' two versions of the
teaching notebooks, from the one source (the notebooks, and the solutions kept beside the
package's exercise checks, :mod:`mpiworkbench.exercises`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mpiworkbench import exercises


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "exercises",
        help="write the student and the solutions version of the teaching notebooks",
        description="Write the teaching notebooks as learners get them (a blank in every answer "
        "cell) and/or with the reference solutions filled in, for teachers.",
    )
    parser.add_argument("--notebooks", default="notebooks", metavar="DIR",
                        help="where the teaching notebooks are (default: ./notebooks)")
    parser.add_argument("--student", metavar="DIR", help="write the learners' version here")
    parser.add_argument("--solutions", metavar="DIR", help="write the version with solutions here")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import nbformat

    source = Path(args.notebooks)
    paths = sorted(source.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks in {str(source)!r}; pass --notebooks DIR (the repository's notebooks/)")
    if not (args.student or args.solutions):
        raise ValueError("nothing to write: pass --student DIR and/or --solutions DIR")
    for target, kind in ((args.student, None), (args.solutions, "solution")):
        if not target:
            continue
        Path(target).mkdir(parents=True, exist_ok=True)
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            if kind is not None:
                exercises.inject(nb, path.stem, kind)
            nbformat.write(nb, Path(target) / path.name)
        print(f"wrote {len(paths)} notebooks ({'with solutions' if kind else 'for learners'}) to {target}")
    return 0
