"""The site's MPI detected, never guessed (``mpiworkbench.core.sitempi``): families from version
strings, launchers and compiler wrappers; a launcher of the wrong family passed over and named;
the default when mpi4py loads a library from outside the venv; mismatches refused with both
sides named. Fake ``mpiexec`` programs stand in for a site's (compilers: tests/unit/test_mpicc.py; the real ones, Debian's
Open MPI and MPICH and a module's Intel MPI, are in tests/notebooks/test_site_mpi.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from mpiworkbench.core import implementations as impls
from mpiworkbench.core import sitempi, usable

HYDRA = "HYDRA build details:\n    Version:  4.0.2\n"
ORTE = "mpiexec (OpenRTE) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"


def _program(path: Path, output: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize("text, family", [
    ("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4", "openmpi"),
    ("MPICH Version:      4.0.2\nMPICH Release date: Thu Apr  7 2022", "mpich"),
    ("Intel(R) MPI Library 2021.18.1 for Linux* OS", "mpich"),
    ("MVAPICH2 Version 2.3.7", "mpich"),
    ("Spectrum-like MPI 10.4", None),
])
def test_the_family_comes_from_the_library_version(text, family):
    assert sitempi.family_of_version(text) == family


def test_a_launchers_family_is_what_its_version_says(tmp_path):
    assert sitempi.launcher_family(_program(tmp_path / "a" / "mpiexec", HYDRA)) == ("mpich", "HYDRA build details:")
    assert sitempi.launcher_family(_program(tmp_path / "b" / "mpiexec", ORTE))[0] == "openmpi"
    assert sitempi.launcher_family(_program(tmp_path / "c" / "mpiexec", "whatever 1.0\n"))[0] is None
    family, why = sitempi.launcher_family(str(tmp_path / "nowhere" / "mpiexec"))
    assert family is None and "nowhere" in why


def test_the_first_launcher_of_the_librarys_family_wins_and_the_others_are_named(tmp_path):
    """Debian's layout: `mpiexec` is the alternatives' choice (Open MPI), `mpiexec.mpich` MPICH's."""
    bin_ = tmp_path / "usr" / "bin"
    openmpi = _program(bin_ / "mpiexec", ORTE)
    hydra = _program(bin_ / "mpiexec.mpich", HYDRA)
    candidates = sitempi._candidates("mpiexec", [], str(bin_))
    assert candidates == [openmpi, hydra]
    reasons: dict = {}
    chosen = sitempi._pick("mpiexec", None, candidates, "mpich", lambda p: sitempi.launcher_family(p)[0], reasons)
    assert chosen == hydra and f"passed over: {openmpi} is Open MPI's" in reasons["mpiexec"]
    # one named by the variable must be of the library's family: otherwise none, and why
    reasons = {}
    assert sitempi._pick("mpiexec", openmpi, [], "mpich", lambda p: sitempi.launcher_family(p)[0], reasons) == ""
    assert f"${sitempi.MPIEXEC_VARIABLE}={openmpi} is Open MPI's, not MPICH ABI's" == reasons["mpiexec"]


def test_the_venvs_own_launcher_is_never_the_sites(tmp_path):
    """The mpich wheel puts MPICH's Hydra beside the interpreter: a site's MPICH-family library
    must not be launched by it (it is the wheel's, and comes first on a venv's PATH)."""
    own = tmp_path / "venv" / "bin"
    _program(own / "mpiexec", HYDRA)
    site = _program(tmp_path / "site" / "bin" / "mpiexec", HYDRA)
    path = f"{own}{os.pathsep}{tmp_path / 'site' / 'bin'}"
    assert sitempi._candidates("mpiexec", [], path, frozenset({str(own)})) == [site]
    # and the interpreter's own bin/ always (the mpich wheel's mpiexec is beside it)
    assert os.path.realpath(Path(sys.executable).parent) not in {
        os.path.dirname(os.path.realpath(c)) for c in sitempi._candidates("mpiexec", [], os.path.dirname(sys.executable))}


def _facts(**changes) -> sitempi.Detected:
    facts = dict(library="/opt/site/lib/libmpi.so.40", version="Open MPI v4.1.4, package: Debian OpenMPI",
                 family="openmpi", mpi4py="4.1.2", extension="/v/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so",
                 built_with="", mpiexec="/opt/site/bin/mpiexec", mpicc="/opt/site/bin/mpicc",
                 reasons={"mpiexec": "found", "mpicc": "found"})
    facts.update(changes)
    return sitempi.Detected(**facts)


def test_the_site_is_the_default_when_mpi4py_loads_a_library_outside_the_venv(monkeypatch):
    monkeypatch.setattr(impls, "_abi_wheel", lambda: False)
    monkeypatch.setattr(sitempi, "detect", lambda env=None, **_: _facts())
    assert impls.default_name() == "site"
    site = impls.get("site")
    assert site.missing() == "" and site.mpiexec() == "/opt/site/bin/mpiexec"
    assert site.env_args("A", "b") == ["-x", "A=b"] and site.launcher_args == ("--oversubscribe",)
    assert site.family == "openmpi" and site.title == "site MPI (Open MPI v4.1.4)"
    env = site.variables()
    assert env[impls.VARIABLE] == "site" and env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert json.loads(env[sitempi.FACTS_VARIABLE])["library"] == "/opt/site/lib/libmpi.so.40"
    # a process started under it reads the facts instead of detecting again
    assert sitempi.detect({sitempi.FACTS_VARIABLE: env[sitempi.FACTS_VARIABLE]}) == _facts()
    # the library the wheel would load from the venv is not a site's
    monkeypatch.setattr(sitempi, "detect", lambda env=None, **_: _facts(library=str(impls.get("mpich").library_file())))
    assert impls.default_name() == "mpich"


def test_a_site_without_a_launcher_of_its_family_is_refused_naming_what_was_found(monkeypatch):
    monkeypatch.setattr(impls, "_abi_wheel", lambda: False)  # mpi4py built from source
    monkeypatch.setattr(sitempi, "detect", lambda env=None, **_: _facts(
        mpiexec="", reasons={"mpiexec": "none of Open MPI's found (passed over: /usr/bin/mpiexec is MPICH ABI's)"}))
    site = impls.get("site")
    with pytest.raises(impls.MPIMismatch, match=r"no mpiexec of the site's MPI, Open MPI v4.1.4 "
                                                r"\(/opt/site/lib/libmpi.so.40\), was found: .*passed over: "
                                                r"/usr/bin/mpiexec is MPICH ABI's.*MPIWORKBENCH_MPIEXEC="):
        usable.check(site)
    with pytest.raises(FileNotFoundError, match="has no mpicc here"):
        dataclasses.replace(site, facts=_facts(mpicc="")).bin("mpicc")


def test_mpi4py_built_for_the_site_refuses_a_pypi_launcher_naming_both(monkeypatch):
    """The issue's first try: mpi4py built against Debian's Open MPI, the mpich wheel's mpiexec
    first on PATH. Refused before any rank starts, never a 60 s wait."""
    monkeypatch.setattr(impls, "_abi_wheel", lambda: False)
    monkeypatch.setattr(sitempi, "detect", lambda env=None, **_: _facts())
    with pytest.raises(impls.MPIMismatch) as info:
        usable.check(impls.get("mpich"))
    text = str(info.value)
    assert "built from source for Open MPI v4.1.4 (/opt/site/lib/libmpi.so.40)" in text
    assert "--mpi mpich is MPICH from PyPI" in text and "--mpi site" in text
    # with PyPI's mpi4py wheel, MPI4PY_LIBMPI picks each implementation's library: no mismatch
    monkeypatch.setattr(impls, "_abi_wheel", lambda: True)
    usable.check(impls.get("mpich"))


def test_a_site_that_cannot_load_is_refused_with_mpi4pys_error(monkeypatch):
    def fails(env=None, **_):
        raise RuntimeError("mpi4py could not load an MPI library (…): undefined symbol: MPI_Buffer_iflush")

    monkeypatch.setattr(sitempi, "detect", fails)
    monkeypatch.setattr(impls, "_abi_wheel", lambda: False)  # mpi4py built from source
    with pytest.raises(impls.MPIMismatch, match="site's MPI cannot be used: .*MPI_Buffer_iflush"):
        usable.check(impls.get("site"))
    assert impls.default_name() == "mpich"  # nothing loads: the commands that need MPI say so


def test_with_pypis_wheel_loading_the_venvs_mpich_nothing_is_probed(monkeypatch):
    """The laptop's case, asked by every rank's environment(): no child process, no launcher run."""
    def probed(env=None, **_):
        raise AssertionError("detected although mpi4py is the wheel loading the venv's MPICH")

    monkeypatch.delenv("MPI4PY_LIBMPI", raising=False)
    monkeypatch.setattr(sitempi, "detect", probed)
    assert impls.default_name() == "mpich"
    assert "the venv's own MPICH from PyPI" in usable.status()["site"]


def test_the_mpi_of_this_venv_is_detected_as_the_wheels(monkeypatch):
    """A real probe (a child process): the suite's venv loads the mpich wheel's library."""
    monkeypatch.delenv("MPI4PY_LIBMPI", raising=False)
    facts = sitempi.detect()
    assert Path(facts.library).resolve() == impls.get("mpich").library_file().resolve()
    assert facts.family == "mpich" and not facts.source_build
    assert "venv's own MPICH from PyPI" in impls.get("site").missing()
