"""One MPI in every rank (:mod:`mpiworkbench.core.onempi`): the MPI library files a process
mapped, read from its maps; a second library planted in a process — preloaded by name, or brought
by an interposer built by another MPI's compiler — refused before the first MPI call, naming both
files and what brought the second; a part that would bring one refused before it is loaded.

Each planted case runs in a child process (what it maps stays there), over the small fake MPI
libraries of :mod:`tests.unit.test_mpicc`; the real MPIs' case (Intel MPI as a site's module with
Debian's MPICH beside it) is in tests/notebooks/test_site_mpi.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpiworkbench.core import implementations, mpifiles
from tests.unit.test_mpicc import DEBIAN_MPICH, LAYOUTS, install

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc")

MAPS = """\
00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/python3.11
7f0000000000-7f0000021000 r-xp 00000000 08:02 1       /opt/impi/lib/libmpi.so.12
7f0000100000-7f0000121000 r--p 00000000 08:02 1       /opt/impi/lib/libmpi.so.12
7f0000200000-7f0000221000 r-xp 00000000 08:02 2       /root/.cache/mpiworkbench/libmpi.wbtrace-0123456789abcdef.so
7f0000300000-7f0000321000 r-xp 00000000 08:02 3       /opt/impi/lib/libmpifort.so.12
7f0000400000-7f0000421000 r-xp 00000000 08:02 4       /usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2 (deleted)
7f0000500000-7f0000521000 rw-p 00000000 00:00 0       [heap]
"""


def test_the_mpi_files_of_a_process_are_read_from_its_maps():
    assert mpifiles.mpi_files(MAPS) == ["/opt/impi/lib/libmpi.so.12", "/usr/lib/x86_64-linux-gnu/libmpich.so.12.2.2"]
    assert "/root/.cache/mpiworkbench/libmpi.wbtrace-0123456789abcdef.so" in mpifiles.mapped_files(MAPS)


def test_symbolic_links_are_one_library(tmp_path):
    real = tmp_path / "libmpich.so.12.2.2"
    real.write_bytes(b"")
    (tmp_path / "libmpi.so.12").symlink_to(real.name)  # Debian's libmpi.so.12 is its libmpich
    maps = "".join(f"7f00-7f01 r-xp 0 08:02 1 {tmp_path / name}\n" for name in ("libmpi.so.12", "libmpich.so.12.2.2"))
    assert mpifiles.mpi_files(maps) == [str(real)]


CHILD = """
import json, sys
from mpiworkbench.core import onempi
try:
    onempi.check(sys.argv[1])
    print(json.dumps({"ok": True}))
except onempi.TwoMPIs as exc:
    print(json.dumps({"ok": False, "said": str(exc)}))
"""


#: A part that calls into MPI (a linker that drops unused libraries keeps this one).
USES_MPI = ("int MPI_Get_library_version(char *version, int *length);\n"
            "int part(char *v) { int n; return MPI_Get_library_version(v, &n); }\n")


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """mpi4py's library (a fake Intel MPI, the implementation's), Debian's MPICH as the second one,
    and an interposer built against the second: (library, second, interposer)."""
    monkeypatch.setenv("MPIWORKBENCH_CACHE", str(tmp_path / "cache"))
    intel = LAYOUTS["intel-pip-prefix"]
    install(intel, tmp_path / "impi")
    install(DEBIAN_MPICH, tmp_path / "usr")
    library = tmp_path / "impi" / intel.library
    second = tmp_path / "usr" / DEBIAN_MPICH.library
    interposer = tmp_path / "cache" / "libmpi.wbtrace-0123456789abcdef.so"
    interposer.parent.mkdir(parents=True)
    source = tmp_path / "interposer.c"
    source.write_text(USES_MPI)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(interposer), str(source), f"-L{second.parent}",
                    f"-Wl,-rpath,{second.parent}", "-lmpich"], check=True)
    return library, second, interposer


def _child(env: dict, when: str = "before its first MPI call") -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, when], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _env(library: Path, preload: list[Path]) -> dict:
    """A rank of an implementation whose library is *library*: the site's, its facts carried."""
    facts = {"library": str(library), "version": "Intel(R) MPI Library 2021.18.1 for Linux* OS", "family": "mpich",
             "mpi4py": "4.1.2", "extension": "/x/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so", "built_with": "",
             "mpiexec": "/x/bin/mpiexec", "mpicc": "/x/bin/mpicc", "reasons": {}}
    # (MPI4PY_LIBMPI: this venv's mpi4py is PyPI's wheel, pointed at the site's library)
    return {**os.environ, implementations.VARIABLE: "site", "MPIWORKBENCH_SITE_MPI": json.dumps(facts),
            "MPI4PY_LIBMPI": str(library), "PMI_RANK": "2", "LD_PRELOAD": " ".join(map(str, preload))}


def test_a_clean_rank_passes(fakes):
    library, _, _ = fakes
    assert _child(_env(library, [library])) == {"ok": True}


def test_a_second_library_named_in_ld_preload_is_refused_before_the_first_call(fakes):
    library, second, _ = fakes
    said = _child(_env(library, [second]))["said"]
    assert said.startswith(f"rank 2 before its first MPI call maps {os.path.realpath(second)}, brought by LD_PRELOAD")
    assert f"not {os.path.realpath(library)} (the library of MPIWORKBENCH_MPI=site" in said
    assert "take it out of LD_PRELOAD" in said


def test_an_interposer_built_by_another_mpis_compiler_is_named_with_its_file(fakes):
    """The issue's world: the interposer built by Debian's mpicc.mpich, preloaded beside Intel MPI."""
    library, second, interposer = fakes
    said = _child(_env(library, [library, interposer]), "once mpi4py loaded its library")["said"]
    assert said.startswith(f"rank 2 once mpi4py loaded its library maps two MPI libraries: {os.path.realpath(library)} "
                           f"(the library of MPIWORKBENCH_MPI=site, what mpi4py loads) and {os.path.realpath(second)}, "
                           f"brought by the MPI interposer (traces, hang reports) ({interposer})"), said
    assert f"remove {interposer}: it is built again, by the compiler of mpi4py's library" in said


def test_without_an_implementation_two_libraries_are_still_two(fakes):
    library, second, _ = fakes
    env = {k: v for k, v in _env(library, [library, second]).items() if k not in ("MPIWORKBENCH_MPI",)}
    said = _child(env)["said"]
    assert "maps two MPI libraries" in said and "mpi4py's" in said and os.path.realpath(second) in said


WOULD = """
import ctypes, json, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # mpi4py's library, loaded
from mpiworkbench.core import onempi
print(json.dumps([onempi.would_bring(part) for part in sys.argv[2:]]))
"""


def test_a_part_is_judged_by_the_library_names_it_needs_before_it_is_loaded(fakes, tmp_path):
    """A part that needs ``libmpi.so.12`` reuses a loaded Intel MPI (its SONAME), as the loader
    does; one that needs ``libmpich.so.12`` would bring Debian's MPICH."""
    library, second, interposer = fakes
    source = tmp_path / "part.c"
    source.write_text(USES_MPI)
    reuses = tmp_path / "libreuses.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(reuses), str(source), f"-L{library.parent}", "-lmpi"],
                   check=True)
    proc = subprocess.run([sys.executable, "-c", WOULD, str(library), str(reuses), str(interposer)],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "LD_PRELOAD": ""})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [[], [os.path.realpath(second)]]
