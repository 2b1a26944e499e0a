"""Which program starts the ranks (``mpiworkbench.core.launchers``): ``srun`` with the PMI the
library speaks inside an allocation for the site's MPI, ``mpiexec`` otherwise; ``srun`` asked for
where it cannot work is refused, naming why. A fake ``srun`` prints what ``srun --mpi=list`` of
Slurm 22.05 prints (the real one is used across the simulated nodes, tests/cluster/test_multinode.py)."""

from __future__ import annotations

import stat

import pytest

from mpiworkbench.core import launchers

SLURM_22 = ("srun: MPI types are...\nsrun: cray_shasta\nsrun: none\nsrun: pmi2\nsrun: pmix\n"
            "srun: pmix_v4\n")


@pytest.fixture
def srun(tmp_path):
    def make(listing: str) -> str:
        path = tmp_path / f"bin{len(list(tmp_path.iterdir()))}" / "srun"
        path.parent.mkdir()
        path.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{listing}EOF\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        return str(path.parent)
    return make


def test_the_plugins_are_read_from_srun(srun):
    assert launchers.srun_plugins(srun(SLURM_22) + "/srun") == ["cray_shasta", "pmi2", "pmix", "pmix_v4"]


def test_inside_an_allocation_the_sites_mpi_is_started_by_srun_with_its_pmi(srun):
    env = {"SLURM_JOB_ID": "42", "PATH": srun(SLURM_22)}
    openmpi = launchers.choose("openmpi", True, env)
    assert openmpi.srun and openmpi.words[1:] == ("--mpi=pmix", "--kill-on-bad-exit=1")
    assert "allocation 42" in openmpi.why
    assert launchers.choose("mpich", True, env).words[1] == "--mpi=pmi2"
    assert openmpi.env_args("LD_PRELOAD", "/x/libmpi.wbtrace.so") == ["--export=ALL,LD_PRELOAD=/x/libmpi.wbtrace.so"]
    assert openmpi.time_args(61) == ["--time=2"] and openmpi.time_args(5) == ["--time=1"]


def test_outside_an_allocation_or_for_pypis_mpis_mpiexec_starts_them(srun):
    path = srun(SLURM_22)
    assert launchers.choose("openmpi", True, {"PATH": path}).name == "mpiexec"
    pypi = launchers.choose("mpich", False, {"SLURM_JOB_ID": "42", "PATH": path})
    assert pypi.name == "mpiexec" and "PyPI" in pypi.why
    said = launchers.choose("openmpi", True, {"SLURM_JOB_ID": "42", "PATH": path, launchers.VARIABLE: "mpiexec"})
    assert said.name == "mpiexec" and said.why == f"{launchers.VARIABLE}=mpiexec"


def test_a_slurm_without_the_pmi_the_library_needs(srun):
    env = {"SLURM_JOB_ID": "42", "PATH": srun("srun: MPI types are...\nsrun: none\nsrun: pmi2\n")}
    fallback = launchers.choose("openmpi", True, env)
    assert fallback.name == "mpiexec" and "offers pmi2" in fallback.why and "Open MPI needs pmix" in fallback.why
    with pytest.raises(launchers.LauncherError, match=r"MPIWORKBENCH_LAUNCHER=srun cannot start these ranks: "
                                                      r"this Slurm's srun offers pmi2 .* Open MPI needs pmix"):
        launchers.choose("openmpi", True, {**env, launchers.VARIABLE: "srun"})


def test_srun_asked_for_without_srun_or_for_a_pypi_mpi_is_refused(tmp_path):
    with pytest.raises(launchers.LauncherError, match="no srun on PATH"):
        launchers.choose("openmpi", True, {"PATH": str(tmp_path), launchers.VARIABLE: "srun"})
    with pytest.raises(launchers.LauncherError, match="no srun on PATH"):
        launchers.choose("mpich", False, {"PATH": str(tmp_path), launchers.VARIABLE: "srun"})


def test_a_pypi_mpi_uses_srun_only_when_asked(srun):
    """The mpich wheel speaks Slurm's PMI-2 (tests/cluster/test_multinode.py starts it with srun)."""
    env = {"SLURM_JOB_ID": "42", "PATH": srun(SLURM_22)}
    assert launchers.choose("mpich", False, env).name == "mpiexec"
    asked = launchers.choose("mpich", False, {**env, launchers.VARIABLE: "srun"})
    assert asked.srun and asked.words[1] == "--mpi=pmi2"
    with pytest.raises(launchers.LauncherError, match="'mpirun' is not a launcher; choose one of auto, mpiexec, srun"):
        launchers.choose("mpich", False, {launchers.VARIABLE: "mpirun"})
