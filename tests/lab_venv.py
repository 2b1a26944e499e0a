"""A JupyterLab environment with nothing of the workbench: the suite's stand-in for a centre's
JupyterLab (an Open OnDemand app's ``module load jupyter``, a hub's image).

``pip install jupyterlab ipywidgets`` into a venv of its own (``.venv/lab-only``, beside the site
venvs), at the versions of the main venv's (pip's cache has them after ``make test``'s install):
no MPI, no numpy of ours, no mpiworkbench. The browser tier's ``test_lab_part.py`` registers the
project's kernel into it, adds the lab part with the command the kernel prints, and removes it
again afterwards, so the venv stays bare between runs.

``python -m tests.lab_venv build`` (``make test`` runs it before the browser tier) prints its Python.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

#: Where it lives: inside the main venv, so each checkout has its own.
ROOT = Path(sys.prefix) / "lab-only"
#: What a centre's JupyterLab environment has: JupyterLab and the widgets' front end, nothing more.
PACKAGES = ("jupyterlab", "ipywidgets")


def python() -> Path:
    return ROOT / "bin" / "python"


def _wanted() -> str:
    return " ".join(f"{name}=={version(name)}" for name in PACKAGES)


def build() -> Path:
    """The venv (made when missing or of other versions); its Python."""
    stamp = ROOT / ".built"
    if stamp.is_file() and stamp.read_text() == _wanted() and python().is_file():
        stamp.touch()  # (newer than the main venv's stamp: make asks no more)
        return python()
    base = getattr(sys, "_base_executable", sys.executable)  # the interpreter, not the main venv's
    subprocess.run([base, "-m", "venv", "--clear", str(ROOT)], check=True, timeout=600)
    subprocess.run([str(python()), "-m", "pip", "install", "--disable-pip-version-check", "-q", *_wanted().split()],
                   check=True, timeout=1800)
    stamp.write_text(_wanted())
    return python()


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        sys.exit("usage: python -m tests.lab_venv build")
    print(build())
