"""Which MPI implementations can run here, and why not: what ``mpiworkbench info`` lists
(:func:`status`), what refuses a launch before any rank starts (:func:`check`), what the panels
offer (:func:`choices`). The implementations themselves are registered in
:mod:`mpiworkbench.core.implementations`.

Where mpi4py is built from source for a site's MPI, nothing here advises installing another
MPI: PyPI's implementations cannot run that mpi4py, and a second MPI in its venv only invites a
rank that holds two (:mod:`mpiworkbench.core.onempi`). How to add one is said where one is asked
for (``--mpi openmpi``), with the way that works: a venv of its own.
"""

from __future__ import annotations

import os

from mpiworkbench.core import implementations, launchers

__all__ = ["status", "check", "choices"]


def status() -> dict[str, str]:
    """Each implementation → ``"installed"`` or why not (what ``mpiworkbench info`` lists); the
    site's → what was detected."""
    site = implementations._site()
    if implementations._abi_wheel():
        found = {impl.name: impl.missing() or "installed" for impl in implementations.REGISTRY}
    else:  # mpi4py built for the site's MPI: PyPI's MPIs cannot run it, so nothing advises installing one
        built_for = site.describe() if site.facts else "another MPI"
        found = {impl.name: f"not for this mpi4py, built from source for {built_for} (PyPI's MPIs run with "
                            "mpi4py's wheel, in a venv of its own)" for impl in implementations.REGISTRY}
    facts = site.facts
    try:
        launcher = site.launcher()
        launched = f"launched by {launcher.name} ({launcher.why})"
    except launchers.LauncherError as exc:
        launched = str(exc)
    found[implementations.SITE] = site.missing() or (
        f"{site.describe()}; {launched}; mpiexec {facts.mpiexec} ({facts.reasons.get('mpiexec')}); "
        f"mpicc {facts.mpicc or 'none'} ({facts.reasons.get('mpicc')}); mpi4py {facts.mpi4py} "
        + (f"built from source with {facts.built_with or 'an unrecorded mpicc'}" if facts.source_build
           else "from its PyPI wheel"))
    return found


def check(impl: implementations.Implementation) -> None:
    """Refuse, before any rank starts, a launch whose parts do not belong together
    (:class:`~mpiworkbench.core.implementations.MPIMismatch`, naming both sides and the fix): mpi4py
    built from source for one library while the launcher is another's (MPI4PY_LIBMPI cannot change
    a source build's library: its ranks would fail, or each start a world of its own), or an
    implementation that is missing (or, for the site's, a launcher of its family that was not found)."""
    if impl.name != implementations.SITE and not implementations._abi_wheel():  # a source build loads its own library
        _refuse_for_source_build(impl)
    why = impl.missing()
    if why:
        raise implementations.MPIMismatch(why)


def _refuse_for_source_build(impl: implementations.Implementation) -> None:
    """Refuse a PyPI implementation under an mpi4py built from source for another library
    (before saying how to install it: that would add a second MPI and still not run)."""
    facts = implementations._detect_site()
    if facts.library and os.path.realpath(facts.library) == os.path.realpath(impl.library_file()):
        return
    raise implementations.MPIMismatch(
        f"mpi4py here was built from source for {facts.title} ({facts.library}) and loads it whatever "
        f"MPI4PY_LIBMPI says, but --mpi {impl.name} is {impl.title} from PyPI ({impl.library_file()}, launched "
        f"by {impl.mpiexec()}): its ranks "
        f"would fail or each start a world of its own. Run under the MPI mpi4py was built for: "
        f"--mpi site (Workbench(mpi='site'), profile create --mpi site); or, to use {impl.title}, "
        "use a venv whose mpi4py is PyPI's wheel (the README's quick start, `make lab`), not this one")


def choices() -> tuple[list[implementations.Implementation], list[str]]:
    """What the panels offer: the implementations that can start ranks here (installed, the site's
    when detected, none refused by :func:`check`), and why each other one cannot."""
    usable, reasons = [], []
    for name in implementations.names():
        impl = implementations.get(name)
        try:
            check(impl)
        except implementations.MPIMismatch as exc:
            reasons.append(str(exc))
            continue
        usable.append(impl)
    return usable, reasons
