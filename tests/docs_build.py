"""``docs/build.py`` as a module (it is a script beside the docs, not a package): the notebook
tier stores the notebooks it executed with it, the browser tier builds the site from them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "docs" / "build.py"

_spec = importlib.util.spec_from_file_location("mpiworkbench_docs_build", PATH)
docs_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(docs_build)
