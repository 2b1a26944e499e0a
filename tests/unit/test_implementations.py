"""The registry of MPI implementations (``mpiworkbench.core.implementations``): names, choices,
environments, detection and the world-size check — no MPI started here."""

from __future__ import annotations

import pytest

from mpiworkbench.client.cluster.profiles import profile_name
from mpiworkbench.core import implementations as impls
from mpiworkbench.core import usable


def test_the_venvs_mpich_is_the_default_and_first():
    assert impls.names()[0] == impls.DEFAULT == "mpich"
    assert impls.names() == ["mpich", "openmpi", "impi", "site"]  # the site's last: detected, not installed


def test_current_follows_the_variable(monkeypatch):
    monkeypatch.delenv(impls.VARIABLE, raising=False)
    assert impls.current().name == "mpich"
    monkeypatch.setenv(impls.VARIABLE, "impi")
    assert impls.current().name == "impi"
    monkeypatch.setenv(impls.VARIABLE, "mvapich")
    with pytest.raises(ValueError, match="unknown MPI implementation 'mvapich'; choose one of mpich, openmpi, impi, site"):
        impls.current()


def test_parse_keeps_order_drops_repeats_and_refuses_bad_names():
    assert [i.name for i in impls.parse("openmpi, mpich,openmpi")] == ["openmpi", "mpich"]
    with pytest.raises(ValueError, match="no MPI implementation named in ' , '"):
        impls.parse(" , ")
    with pytest.raises(ValueError, match="unknown MPI implementation 'ompi'"):
        impls.parse("mpich,ompi")


@pytest.mark.parametrize("text, name", [
    ("MPICH Version:      5.0.2\nMPICH Release date: ...", "mpich"),
    ("Open MPI v5.0.11, package: Open MPI user@localhost Distribution", "openmpi"),
    # Intel MPI is MPICH-derived: its own marker wins
    ("Intel(R) MPI Library 2021.18.1 for Linux* OS\n(based on MPICH)", "impi"),
    ("MVAPICH2 Version 2.3", None),
])
def test_detect_names_the_library_from_its_version_string(text, name):
    assert impls.detect(text) == name


def test_an_implementation_in_an_empty_root_is_missing_with_its_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv(impls.ROOT_VARIABLE, str(tmp_path))
    openmpi = impls.get("openmpi")
    assert openmpi.prefix() == tmp_path / "openmpi"
    why = openmpi.missing()
    assert "Open MPI is not installed" in why and f"--prefix {tmp_path / 'openmpi'}" in why
    assert "openmpi==" in why and not openmpi.installed()
    with pytest.raises(RuntimeError, match="Open MPI is not installed"):
        openmpi.require()
    assert usable.status()["openmpi"] == why


def test_applying_an_implementation_removes_the_others_variables(tmp_path, monkeypatch):
    monkeypatch.setenv(impls.ROOT_VARIABLE, str(tmp_path))
    env = impls.get("impi").apply({"PATH": "/bin", "KEEP": "1"})
    assert env["I_MPI_ROOT"] == str(tmp_path / "impi") and env[impls.VARIABLE] == "impi"
    back = impls.get("openmpi").apply(env)
    assert "I_MPI_ROOT" not in back and back["KEEP"] == "1" and back[impls.VARIABLE] == "openmpi"
    assert back["OPAL_PREFIX"] == str(tmp_path / "openmpi") and back["OMPI_ALLOW_RUN_AS_ROOT"] == "1"


def test_each_launcher_passes_variables_its_own_way():
    assert impls.get("mpich").env_args("A", "b c") == ["-genv", "A", "b c"]
    assert impls.get("impi").env_args("A", "b") == ["-genv", "A", "b"]
    assert impls.get("openmpi").env_args("A", "b") == ["-x", "A=b"]
    command = impls.get("openmpi").command(3, ["python", "x.py"])
    assert command[1:] == ["--oversubscribe", "-n", "3", "python", "x.py"]


def test_profile_names_follow_the_implementation():
    assert profile_name() == profile_name("mpich") == "mpi"
    assert profile_name("openmpi") == "mpi-openmpi"


def test_the_world_size_check_names_both_sizes_and_what_to_do(monkeypatch):
    monkeypatch.delenv(impls.SIZE_VARIABLE, raising=False)
    impls.check_world_size(1)  # no launcher of ours asked for anything
    monkeypatch.setenv(impls.SIZE_VARIABLE, "2")
    impls.check_world_size(2)
    with pytest.raises(RuntimeError, match=r"asked for 2 MPI ranks, but this rank's MPI_COMM_WORLD has 1.*"
                                           r"\(openmpi\) do not belong together.*--mpi"):
        impls.check_world_size(1, "Open MPI v5.0.11")
