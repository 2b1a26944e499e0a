"""Build the documentation site: ``python docs/build.py [--out DIR] [--no-execute]``.

Sphinx reads its sources from one directory, and the notebooks live beside ``docs/``, not in it,
so the sources are staged in a temporary directory (links to ``docs/*`` and to ``notebooks/``)
and built from there into ``--out`` (default ``docs/_build/html``). Warnings are errors. The
notebooks are executed as they are handed out (exercise blanks unanswered), with small sizes,
each on a 2-rank cluster of its own in a fresh IPython directory (a cluster the user runs is
never touched); ``--no-execute`` renders them without outputs. Nothing is written anywhere
else: ``make docs`` runs this, and so does the browser tier (into a temporary directory).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def stage(directory: Path) -> Path:
    """Lay out the site's sources in *directory*: a copy of every file of ``docs/`` but the
    build output and this script, and of ``notebooks/`` (copies, not links: links between
    pages resolve where the files really are); returns *directory*."""
    ignore = shutil.ignore_patterns("_build", "build.py", "__pycache__", ".ipynb_checkpoints")
    shutil.copytree(DOCS, directory, ignore=ignore)
    shutil.copytree(ROOT / "notebooks", directory / "notebooks", ignore=ignore)
    return directory


def build(out: Path, execute: bool = True) -> int:
    """Build the HTML site into *out*; Sphinx's exit code (0: built with no warning)."""
    from sphinx.cmd.build import build_main

    with tempfile.TemporaryDirectory(prefix="mpiwb-docs-") as tmp:
        source = stage(Path(tmp) / "source")
        os.environ["MPIWORKBENCH_DOCS_EXECUTE"] = "force" if execute else "off"
        os.environ.setdefault("MPIWORKBENCH_SMALL", "1")
        os.environ["IPYTHONDIR"] = str(Path(tmp) / "ipython")  # no cluster of the user's is found
        os.environ["MPLBACKEND"] = "Agg"
        return build_main(["-b", "html", "-W", "--keep-going", "-q", "-d", str(Path(tmp) / "doctrees"),
                           str(source), str(out)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS / "_build" / "html", help="where the site goes")
    parser.add_argument("--no-execute", action="store_true", help="render the notebooks without running them")
    args = parser.parse_args(argv)
    code = build(args.out.resolve(), execute=not args.no_execute)
    if code == 0:
        print(f"site built: {args.out / 'index.html'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
