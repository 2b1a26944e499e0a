"""The compiler of mpi4py's library, found where centres install MPIs and proven, never guessed
(:mod:`mpiworkbench.core.mpicc`, :func:`mpiworkbench.core.sitempi._prove`).

Each case lays out one MPI as a centre's install holds it — Intel MPI (oneAPI's ``lib/release``
and the pip wheels' layout), MVAPICH from Spack, HPE Cray MPICH behind PrgEnv's ``cc``, Open MPI 5
from a module (``OPAL_PREFIX``) and from conda-forge, Debian's Open MPI — with a real ``mpi.h``
marker and a wrapper whose compile line is its real ``-show`` line, over a small C library of the
library's file name, ``SONAME`` and ``MPI_Get_library_version``. On ``PATH`` *before* it stand two
other MPIs' compilers, as on a machine with Debian's MPICH installed beside the module: the one
whose family markers match (MPICH's ABI) is the trap the site's detection fell into. The proof
must pick the site's own, and say why the others were passed over.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from mpiworkbench.core import mpicc, mpifiles, sitempi

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the fake MPIs")


@dataclass(frozen=True)
class Layout:
    """One MPI as installed: where its library is (relative to the prefix), the library's file
    and ``SONAME``, its version string, the ``mpi.h`` marker it defines, its wrapper (relative to
    the prefix, or a name on ``PATH``) and the wrapper's ``-show`` line ({P}: the prefix)."""

    library: str
    soname: str
    version: str
    marker: str
    wrapper: str
    show: str
    env: tuple[tuple[str, str], ...] = ()  # variables the module sets ({P}: the prefix)


LAYOUTS = {
    "intel-oneapi": Layout(
        "mpi/2021.13/lib/release/libmpi.so.12.0.0", "libmpi.so.12", "Intel(R) MPI Library 2021.13 for Linux* OS\n",
        '#define I_MPI_VERSION "2021.13.0"\n#define MPICH_VERSION "3.4a2"', "mpi/2021.13/bin/mpicc",
        'gcc -I"{P}/mpi/2021.13/include" -L"{P}/mpi/2021.13/lib/release" -L"{P}/mpi/2021.13/lib" -Xlinker '
        '--enable-new-dtags -Xlinker -rpath -Xlinker "{P}/mpi/2021.13/lib/release" -lmpi -lrt -lpthread -ldl',
        (("I_MPI_ROOT", "{P}/mpi/2021.13"),)),
    "intel-pip-prefix": Layout(
        "lib/libmpi.so.12", "libmpi.so.12", "Intel(R) MPI Library 2021.18.1 for Linux* OS\n",
        '#define I_MPI_VERSION "2021.18.1"', "bin/mpiicx",
        'gcc -I"{P}/include" -L"{P}/lib" -Xlinker --enable-new-dtags -Xlinker -rpath -Xlinker "{P}/lib" -lmpi -ldl',
        (("I_MPI_ROOT", "{P}"),)),
    "mvapich-spack": Layout(
        "linux-x86_64/gcc-12.2.0/mvapich-3.0-5bqnvfu/lib/libmpi.so.12.1.1", "libmpi.so.12",
        "MVAPICH Version:\t3.0\nMVAPICH Release date:\t2024\n", '#define MVAPICH_VERSION "3.0"',
        "linux-x86_64/gcc-12.2.0/mvapich-3.0-5bqnvfu/bin/mpicc",
        "gcc -I{P}/linux-x86_64/gcc-12.2.0/mvapich-3.0-5bqnvfu/include -L{P}/linux-x86_64/gcc-12.2.0/mvapich-3.0-5bqnvfu/lib "
        "-Wl,-rpath -Wl,{P}/linux-x86_64/gcc-12.2.0/mvapich-3.0-5bqnvfu/lib -Wl,--enable-new-dtags -lmpi"),
    "cray-mpich": Layout(
        "mpich/8.1.28/ofi/gnu/12.3/lib/libmpi_gnu_123.so.12.0.0", "libmpi_gnu_123.so.12",
        "MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)\n",
        '#define MPICH_VERSION "3.4a2"\n#define CRAY_MPICH_VERSION 8.1.28', "craype/2.7.30/bin/cc",
        "gcc -I{P}/mpich/8.1.28/ofi/gnu/12.3/include -L{P}/mpich/8.1.28/ofi/gnu/12.3/lib "
        "-Wl,-rpath,{P}/mpich/8.1.28/ofi/gnu/12.3/lib -lmpi_gnu_123",
        (("PE_ENV", "GNU"), ("CRAYPE_VERSION", "2.7.30"))),
    "openmpi5-module": Layout(
        "lib/libmpi.so.40.40.3", "libmpi.so.40", "Open MPI v5.0.3, package: Open MPI builder Distribution\n",
        "#define OMPI_MAJOR_VERSION 5\n#define OMPI_MINOR_VERSION 0", "bin/mpicc",
        "gcc -I{P}/include -L{P}/lib -Wl,-rpath -Wl,{P}/lib -Wl,--enable-new-dtags -lmpi",
        (("OPAL_PREFIX", "{P}"),)),
    "openmpi-conda": Layout(
        "lib/libmpi.so.40.30.6", "libmpi.so.40", "Open MPI v4.1.6, package: Open MPI conda@builder Distribution\n",
        "#define OMPI_MAJOR_VERSION 4", "bin/mpicc",
        "gcc -I{P}/include -L{P}/lib -Wl,-rpath,{P}/lib -lmpi", (("CONDA_PREFIX", "{P}"),)),
}
#: The trap: Debian's MPICH (MPICH's ABI, as Intel MPI, MVAPICH and Cray MPICH), first on PATH.
DEBIAN_MPICH = Layout("lib/x86_64-linux-gnu/libmpich.so.12.2.2", "libmpich.so.12", "MPICH Version:      4.0.2\n",
                      '#define MPICH_VERSION "4.0.2"', "bin/mpicc.mpich",
                      "gcc -Wl,-z,relro -I{P}/include/x86_64-linux-gnu/mpich -L{P}/lib/x86_64-linux-gnu -Wl,-rpath,"
                      "{P}/lib/x86_64-linux-gnu -lmpich")
#: And Debian's Open MPI, its alternatives' `mpicc`.
DEBIAN_OPENMPI = Layout("lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4", "libmpi.so.40",
                        "Open MPI v4.1.4, package: Debian OpenMPI\n", "#define OMPI_MAJOR_VERSION 4", "bin/mpicc",
                        "gcc -I{P}/lib/x86_64-linux-gnu/openmpi/include -L{P}/lib/x86_64-linux-gnu/openmpi/lib "
                        "-Wl,-rpath,{P}/lib/x86_64-linux-gnu/openmpi/lib -lmpi")

FAKE_C = r"""
#include <string.h>
int MPI_Get_library_version(char *version, int *length) {
    static const char text[] = VERSION;
    strcpy(version, text);
    *length = (int)strlen(text);
    return 0;
}
"""


def install(layout: Layout, prefix: Path) -> Path:
    """Lay *layout* out under *prefix*; its wrapper's path."""
    library = prefix / layout.library
    library.parent.mkdir(parents=True, exist_ok=True)
    source = prefix / "fake.c"
    source.write_text(FAKE_C)
    version = layout.version.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    subprocess.run(["gcc", "-shared", "-fPIC", f'-DVERSION="{version}"', f"-Wl,-soname,{layout.soname}", "-o",
                    str(library), str(source)], check=True)
    for link in {layout.soname, _link_name(layout)}:  # the names the loader and the linker look for
        if not (library.parent / link).exists():
            (library.parent / link).symlink_to(library.name)
    show = layout.show.replace("{P}", str(prefix))
    include = Path(next(word for word in show.replace('"', "").split() if word.startswith("-I"))[2:])
    include.mkdir(parents=True, exist_ok=True)
    (include / "mpi.h").write_text(f"{layout.marker}\n#define MPI_MAX_LIBRARY_VERSION_STRING 8192\n"
                                   "int MPI_Get_library_version(char *version, int *length);\n")
    wrapper = prefix / layout.wrapper
    wrapper.parent.mkdir(parents=True, exist_ok=True)
    compiler, flags = show.split(" ", 1)
    wrapper.write_text(f'#!/bin/sh\nif [ "$1" = -show ]; then echo \'{show}\'; exit 0; fi\n'
                       f"exec {compiler} \"$@\" {flags}\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return wrapper


def _link_name(layout: Layout) -> str:
    """``libmpi_gnu_123.so`` for ``-lmpi_gnu_123``: what the wrapper's ``-l`` asks the linker for."""
    return layout.soname.split(".so")[0] + ".so"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MPIWORKBENCH_CACHE", str(tmp_path / "cache"))


def _machine(tmp_path: Path, layout: Layout) -> tuple[dict, str, Path, list[Path]]:
    """The site's MPI loaded as its module would load it, Debian's MPICH and Open MPI installed
    beside it and first on PATH: (environment, the site's library, its wrapper, the traps)."""
    site = tmp_path / "site"
    wrapper = install(layout, site)
    traps = [install(DEBIAN_MPICH, tmp_path / "usr-mpich"), install(DEBIAN_OPENMPI, tmp_path / "usr-openmpi")]
    env = {**os.environ, **{k: v.replace("{P}", str(site)) for k, v in layout.env}}
    path = [str(t.parent) for t in traps] + [str(wrapper.parent)]
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    return env, str(site / layout.library), wrapper, traps


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_compiler_proven_is_the_libraries_own_with_other_mpis_first_on_path(name, tmp_path):
    layout = LAYOUTS[name]
    env, library, wrapper, traps = _machine(tmp_path, layout)
    listed = mpicc.candidates(env, library)
    assert str(wrapper) in listed and all(str(t) in listed for t in traps), listed
    reasons: dict = {}
    facts = {"library": library, "version": layout.version}
    chosen = sitempi._prove(None, listed, facts, env, [], reasons)
    assert chosen == str(wrapper), reasons
    assert reasons["mpicc"].startswith("proven"), reasons
    # the trap of the same family (MPICH's ABI) or of Open MPI, when tried, named with the library it links
    for trap in traps:
        if listed.index(str(trap)) < listed.index(str(wrapper)):
            assert f"{trap} links " in reasons["mpicc"] and "not mpi4py's" in reasons["mpicc"], reasons


@pytest.mark.parametrize("name", LAYOUTS)
def test_the_install_tree_comes_before_path(name, tmp_path):
    """The library's own ``bin/`` (beside its ``lib/``, or under the module's prefix variable) is
    tried before any compiler on PATH, so no other MPI's compiler is even built with."""
    layout = LAYOUTS[name]
    env, library, wrapper, traps = _machine(tmp_path, layout)
    listed = mpicc.candidates(env, library)
    if os.path.basename(wrapper) == "cc":  # Cray: PrgEnv's cc is on PATH, not in the library's tree
        assert listed.index(str(wrapper)) > max(listed.index(str(t)) for t in traps)
    else:
        assert listed[0] == str(wrapper), listed
        reasons: dict = {}
        sitempi._prove(None, listed, {"library": library, "version": layout.version}, env, [], reasons)
        assert "passed over" not in reasons["mpicc"], reasons


def test_a_named_compiler_of_another_mpi_is_refused_not_replaced(tmp_path):
    """$MPIWORKBENCH_MPICC naming Debian's MPICH under Intel MPI: no compiler, and why; never another."""
    layout = LAYOUTS["intel-pip-prefix"]
    env, library, wrapper, traps = _machine(tmp_path, layout)
    reasons: dict = {}
    chosen = sitempi._prove(str(traps[0]), mpicc.candidates(env, library), {"library": library, "version": layout.version},
                            env, [], reasons)
    assert chosen == ""
    assert reasons["mpicc"].startswith(f"$MPIWORKBENCH_MPICC={traps[0]}: {traps[0]} links ")
    assert "libmpich.so.12.2.2 (MPICH Version: 4.0.2), not mpi4py's" in reasons["mpicc"], reasons


def test_no_compiler_of_the_library_is_none_and_says_what_was_passed_over(tmp_path):
    layout = LAYOUTS["mvapich-spack"]
    env, library, wrapper, traps = _machine(tmp_path, layout)
    wrapper.unlink()
    reasons: dict = {}
    assert sitempi._prove(None, mpicc.candidates(env, library), {"library": library, "version": layout.version},
                          env, [], reasons) == ""
    assert reasons["mpicc"].startswith(f"none of the compilers found builds against mpi4py's library {library}")
    assert str(traps[0]) in reasons["mpicc"] and "MPIWORKBENCH_MPICC=" in reasons["mpicc"]


def test_a_proof_is_kept_per_compiler_and_environment(tmp_path):
    layout = LAYOUTS["openmpi5-module"]
    env, library, wrapper, _ = _machine(tmp_path, layout)
    first = mpicc.link(str(wrapper), env)
    assert first.files == (os.path.realpath(library),) and first.version == layout.version.strip()
    kept = list((tmp_path / "cache" / "mpicc-proofs").glob("*.json"))
    assert len(kept) == 1
    os.chmod(wrapper, 0o755)  # a rebuilt wrapper (another mtime) is proven again, in an entry of its own
    os.utime(wrapper, ns=(1, 1))
    assert mpicc.link(str(wrapper), env) == first
    assert len(list((tmp_path / "cache" / "mpicc-proofs").glob("*.json"))) == 2


def test_the_library_names_of_every_mpi_are_known_and_the_interposer_is_not_one():
    for layout in (*LAYOUTS.values(), DEBIAN_MPICH, DEBIAN_OPENMPI):
        assert mpifiles.is_mpi_library(layout.library), layout.library
    for name in ("libmpi.wbtrace-0123456789abcdef.so", "libmpifort.so.12", "libopen-pal.so.40", "libfabric.so.1",
                 "libmpicxx.so.12", "libmpi_ilp64.so.4"):
        assert not mpifiles.is_mpi_library(name), name


@pytest.mark.parametrize("text, family", [
    ("MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)", "mpich"),
    ("MVAPICH Version:\t3.0", "mpich"),
    ("Open MPI v5.0.3, package: Open MPI builder Distribution, ident: 5.0.3", "openmpi"),
])
def test_the_families_of_centres_mpis_come_from_their_library_versions(text, family):
    assert sitempi.family_of_version(text) == family
