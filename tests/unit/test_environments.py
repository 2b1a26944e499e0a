"""The three ways to install name the same packages: pyproject, environment.yml, binder/."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: conda-only build helpers with no PyPI counterpart in pyproject.toml
CONDA_ONLY = {"python", "pip", "c-compiler"}


def _conda_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        match = re.match(r"^\s*-\s*([A-Za-z0-9_.\-]+)", line)
        if match and not line.strip().startswith("- conda-forge"):
            names.add(match.group(1).lower())
    return names - {"conda-forge"}


def _pyproject_names() -> set[str]:
    """The runtime dependencies and the laptop's MPI (the ``mpich`` extra: conda-forge's mpi4py
    comes with an MPI, and the environments name conda-forge's MPICH)."""
    deps = [r for r in metadata.requires("mpiworkbench") or []
            if "extra ==" not in r or re.search(r"extra == .mpich.$", r)]
    return {re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() for d in deps}


def test_binder_and_root_environments_name_the_same_packages():
    assert _conda_names(REPO / "binder" / "environment.yml") == _conda_names(REPO / "environment.yml")


def test_conda_environment_matches_pyproject():
    assert _conda_names(REPO / "environment.yml") - CONDA_ONLY == _pyproject_names()


def test_binder_start_ends_in_exec():
    lines = [l for l in (REPO / "binder" / "start").read_text().splitlines() if l.strip()]
    assert lines[-1] == 'exec "$@"'
