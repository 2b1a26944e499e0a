"""Build the documentation site: ``python docs/build.py [--out DIR] [--execute | --no-execute]``.

Sphinx reads its sources from one directory, and the notebooks live beside ``docs/``, not in it,
so the sources are staged in a temporary directory (copies of ``docs/*`` and of ``notebooks/``)
and built from there into ``--out`` (default ``docs/_build/html``). Warnings are errors.

The notebooks are shown as they are handed out (exercise blanks unanswered), with the outputs of
a run with small sizes, each on a 2-rank cluster of its own. Those outputs come from one of two
places:

* **stored**: the notebook tier of the test suite (``tests/notebooks/test_notebooks.py``) runs
  every notebook exactly so and stores the executed notebook under
  ``<cache>/executed-notebooks/<sources digest>/`` (:func:`store_dir`), stamped with the digest
  of the sources it ran (the notebooks, the package and ``pyproject.toml``:
  :func:`sources_digest`). When every notebook is stored for the sources as they are now, the
  site renders those outputs and executes nothing (``make test`` builds it so in the browser
  tier, after the notebook tier).
* **executed**: otherwise, or with ``--execute``, every notebook is executed into the site
  (each on a 2-rank cluster of its own in a fresh IPython directory: a cluster the user runs is
  never touched). ``--stored`` refuses to execute instead (an error naming what is missing or
  stale); ``--no-execute`` renders the notebooks without outputs.

Nothing is written anywhere else: ``make docs`` runs this, and so does the browser tier (into a
temporary directory).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "notebooks"

#: What the notebooks' outputs depend on, beside the machine: the notebooks themselves, the
#: package they drive and the dependencies it declares.
SOURCES = ("notebooks", "mpiworkbench", "pyproject.toml")
#: Files inside SOURCES that are made by running them, not sources (caches, built libraries).
_MADE = {"__pycache__", ".ipynb_checkpoints"}
_MADE_SUFFIXES = {".pyc", ".so", ".nbi", ".nbc"}
#: Where a stored notebook says which sources it ran: ``metadata[KEY]["sources"]``.
KEY = "mpiworkbench"
#: Digests whose stored notebooks are kept besides the one being written (other checkouts, or
#: the commits just before); older ones are removed.
KEEP = 3


def handed_out() -> list[Path]:
    """The notebooks of the teaching path, in order (what the site shows)."""
    return sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("_"))


def sources_digest(root: Path = ROOT) -> str:
    """A digest of every source file the notebooks' outputs depend on (names and contents)."""
    digest = hashlib.sha256()
    for top in SOURCES:
        base = root / top
        files = [base] if base.is_file() else sorted(
            p for p in base.rglob("*")
            if p.is_file() and p.suffix not in _MADE_SUFFIXES and not _MADE & set(p.relative_to(base).parts))
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()[:24]


def store_dir(digest: str | None = None) -> Path:
    """Where the notebooks executed on sources *digest* (default: as they are now) are stored."""
    from mpiworkbench.core.cache import cache_dir

    return cache_dir() / "executed-notebooks" / (digest or sources_digest())


def store_executed(nb, name: str, digest: str | None = None) -> Path:
    """Store the executed notebook *nb* (an nbformat node, as handed out) as *name*, stamped
    with the digest of the sources it ran; older digests beyond :data:`KEEP` are removed."""
    import nbformat

    digest = digest or sources_digest()
    directory = store_dir(digest)
    directory.mkdir(parents=True, exist_ok=True)
    nb.metadata[KEY] = {**nb.metadata.get(KEY, {}), "sources": digest}
    with tempfile.NamedTemporaryFile("w", dir=directory, suffix=".tmp", delete=False) as tmp:
        nbformat.write(nb, tmp)
    os.replace(tmp.name, directory / name)  # readers never see a half-written notebook
    others = sorted((d for d in directory.parent.iterdir() if d.is_dir() and d != directory),
                    key=lambda d: d.stat().st_mtime, reverse=True)
    for old in others[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    return directory / name


def stored_notebooks(digest: str | None = None) -> tuple[dict[str, Path], list[str]]:
    """``({name: stored path}, problems)``: every handed-out notebook's stored execution on the
    sources as they are now, and what is missing or stale (empty when all are there)."""
    digest = digest or sources_digest()
    directory = store_dir(digest)
    found, problems = {}, []
    for path in handed_out():
        stored = directory / path.name
        if not stored.exists():
            problems.append(f"{path.name}: not executed on these sources (no {stored})")
            continue
        stamp = json.loads(stored.read_text()).get("metadata", {}).get(KEY, {}).get("sources")
        if stamp != digest:
            problems.append(f"{path.name}: stored outputs are from sources {stamp}, these are {digest}")
            continue
        found[path.name] = stored
    return found, problems


def stage(directory: Path, notebooks: dict[str, Path] | None = None) -> Path:
    """Lay out the site's sources in *directory*: a copy of every file of ``docs/`` but the
    build output and this script, and of ``notebooks/`` (copies, not links: links between
    pages resolve where the files really are), its notebooks replaced by *notebooks*
    (``{name: executed copy}``) when given; returns *directory*."""
    ignore = shutil.ignore_patterns("_build", "build.py", "__pycache__", ".ipynb_checkpoints")
    shutil.copytree(DOCS, directory, ignore=ignore)
    shutil.copytree(NOTEBOOKS, directory / "notebooks", ignore=ignore)
    for name, executed in (notebooks or {}).items():
        shutil.copyfile(executed, directory / "notebooks" / name)
    return directory


def build(out: Path, execute: str = "auto") -> int:
    """Build the HTML site into *out*; Sphinx's exit code (0: built with no warning).

    *execute*: ``"auto"`` renders the stored executions when all are there for these sources
    and executes the notebooks otherwise; ``"stored"`` renders the stored ones or fails saying
    what is missing; ``"always"`` executes them; ``"never"`` renders them without outputs."""
    from sphinx.cmd.build import build_main

    if execute not in ("auto", "stored", "always", "never"):
        raise ValueError(f"execute must be 'auto', 'stored', 'always' or 'never'; got {execute!r}")
    stored: dict[str, Path] = {}
    if execute in ("auto", "stored"):
        digest = sources_digest()
        stored, problems = stored_notebooks(digest)
        if problems and execute == "stored":
            print("the notebooks' stored outputs cannot be used (run `make test-notebooks` to store "
                  "them, or build with --execute):\n  " + "\n  ".join(problems), file=sys.stderr)
            return 2
        if problems:
            stored = {}
        print("notebooks: " + (f"the outputs stored by the notebook tier ({store_dir(digest)})" if stored
                               else "executed into the site (no stored outputs for these sources)"))
    else:
        print("notebooks: " + ("executed into the site" if execute == "always" else "without outputs"))
    with tempfile.TemporaryDirectory(prefix="mpiwb-docs-") as tmp:
        source = stage(Path(tmp) / "source", stored)
        run = execute == "always" or (execute == "auto" and not stored)
        os.environ["MPIWORKBENCH_DOCS_EXECUTE"] = "force" if run else "off"
        os.environ.setdefault("MPIWORKBENCH_SMALL", "1")
        os.environ["IPYTHONDIR"] = str(Path(tmp) / "ipython")  # no cluster of the user's is found
        os.environ["MPLBACKEND"] = "Agg"
        return build_main(["-b", "html", "-W", "--keep-going", "-q", "-d", str(Path(tmp) / "doctrees"),
                           str(source), str(out)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DOCS / "_build" / "html", help="where the site goes")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--execute", dest="execute", action="store_const", const="always",
                     help="execute every notebook into the site (even when stored outputs are there)")
    how.add_argument("--stored", dest="execute", action="store_const", const="stored",
                     help="render the outputs the notebook tier stored for these sources; fail if any is missing")
    how.add_argument("--no-execute", dest="execute", action="store_const", const="never",
                     help="render the notebooks without outputs")
    parser.set_defaults(execute="auto")
    args = parser.parse_args(argv)
    code = build(args.out.resolve(), execute=args.execute)
    if code == 0:
        print(f"site built: {args.out / 'index.html'}")
    return code


if __name__ == "__main__":
    sys.exit(main())
