"""The foundation without MPI: imports, CLI wiring, profiles, reports, panel HTML."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
import sys

import pytest

import mpiworkbench
from mpiworkbench.cli import build_parser, main
from mpiworkbench.cli.lab import lab_command
from mpiworkbench.core.launch import mpiexec_command
from mpiworkbench.client.errors import ExecutionTimeout, RankFailure, RankStatus, ranks_text
from mpiworkbench.widgets.control import profile_status, status_html
from mpiworkbench.client.cluster.profiles import create_profile
def _modules_after_import(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_importing_the_package_needs_neither_mpi_nor_ipyparallel():
    loaded = _modules_after_import("import mpiworkbench")
    assert not {"mpi4py", "ipyparallel", "IPython"} & loaded


@pytest.mark.parametrize(
    "module",
    [
        "mpiworkbench.core.mpi",
        "mpiworkbench.core.objects",
        "mpiworkbench.core.machine",
        "mpiworkbench.backends",
        "mpiworkbench.bench",
        "mpiworkbench.solvers.wave.solver",
        "mpiworkbench.solvers.cg.solver",
        "mpiworkbench.speedup",
    ],
)
def test_engine_side_core_never_imports_ipyparallel_or_ipython(module):
    loaded = _modules_after_import(f"import {module}")
    assert not {"ipyparallel", "IPython"} & loaded, module


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"mpiworkbench {mpiworkbench.__version__}"


def test_every_command_is_registered():
    choices = build_parser()._subparsers._group_actions[0].choices
    assert {"info", "lab", "profile", "syntax", "bench", "wave", "cg", "speedup"} <= set(choices)


def test_lab_listens_on_loopback_by_default(tmp_path):
    args = build_parser().parse_args(["lab"])
    assert args.ip == "127.0.0.1"
    cmd = lab_command(tmp_path, args.ip, args.port, no_browser=True)
    assert "--ServerApp.ip=127.0.0.1" in cmd and f"--ServerApp.root_dir={tmp_path}" in cmd


def test_mpiexec_command_runs_the_cli_under_mpi4py():
    cmd = mpiexec_command(3, ["wave", "--mesh", "17"])
    n = cmd.index("-n")
    assert Path(cmd[n - 1]).name == "mpiexec" and cmd[n + 1] == "3"
    assert cmd[n + 2:] == [sys.executable, "-m", "mpi4py", "-m", "mpiworkbench", "wave", "--mesh", "17"]


def test_profile_files(tmp_path):
    profile = create_profile("teach", ipython_dir_=tmp_path)
    assert profile == tmp_path / "profile_teach"
    cluster = (profile / "ipcluster_config.py").read_text()
    assert 'engine_launcher_class = "mpi"' in cluster and "mpi_cmd" in cluster
    from traitlets.config.loader import PyFileConfigLoader

    from mpiworkbench.client.cluster.engine_start import ENGINE_CMD

    config = PyFileConfigLoader("ipcluster_config.py", path=str(profile)).load_config()
    assert config.MPIEngineSetLauncher.engine_cmd == ENGINE_CMD  # engines fork their nannies there too
    assert "c.IPController.ip = '127.0.0.1'" in (profile / "ipcontroller_config.py").read_text()
    assert "use_mpi = True" in (profile / "ipengine_config.py").read_text()


def test_profile_rejects_unknown_launcher(tmp_path):
    with pytest.raises(ValueError, match="unknown launcher 'pbs-pro'; available: mpi, slurm"):
        create_profile("x", launcher="pbs-pro", ipython_dir_=tmp_path)


def test_slurm_profile_holds_the_world_in_one_job_and_warns_about_loopback(tmp_path):
    with pytest.warns(UserWarning, match="engines on other hosts cannot reach it"):
        profile = create_profile("hpc", launcher="slurm", ipython_dir_=tmp_path)
    cluster = (profile / "ipcluster_config.py").read_text()
    assert 'engine_launcher_class = "slurm"' in cluster and "#SBATCH --ntasks={n}" in cluster
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("ipcluster_config.py", path=str(profile)).load_config()
    launcher = config.SlurmEngineSetLauncher
    # one mpiexec: one MPI world, its ranks with the interposer preloaded (when it can be built)
    assert re.search(r"mpiexec( -genv LD_PRELOAD \S+)? -n \{n\} \{program_and_args\}$", launcher.batch_template, re.M)
    # the batch script goes into the profile, never into the directory ipcluster or a notebook runs in
    assert launcher.batch_file_name == str(profile / "log" / "slurm_engine.sbatch")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an explicit address: no warning
        create_profile("hpc", launcher="slurm", ip="10.0.0.5", ipython_dir_=tmp_path)
    assert "c.IPController.ip = '10.0.0.5'" in (profile / "ipcontroller_config.py").read_text()


def test_profile_command(tmp_path, capsys):
    assert main(["profile", "create", "--name", "demo", "--ipython-dir", str(tmp_path)]) == 0
    assert "ipcluster start -n 2 --profile=demo" in capsys.readouterr().out
    assert (tmp_path / "profile_demo" / "ipcluster_config.py").exists()

    def encrypted(*options: str) -> bool:
        assert main(["profile", "create", "--name", "demo", "--ipython-dir", str(tmp_path), *options]) == 0
        return "c.IPController.enable_curve = True" in (tmp_path / "profile_demo" / "ipcontroller_config.py").read_text()

    # signed always; encrypted beyond loopback unless asked otherwise, on loopback when asked
    assert [encrypted(), encrypted("--ip", "10.1.2.3"), encrypted("--ip", "10.1.2.3", "--no-encrypt"),
            encrypted("--encrypt")] == [False, True, False, True]
    with pytest.raises(SystemExit):
        main(["profile", "create", "--encrypt", "--no-encrypt"])


def test_timeout_report_names_ranks_and_the_way_out():
    report = ExecutionTimeout(
        [
            RankStatus(1, 5, "running"),
            RankStatus(0, 4, "failed", "ValueError: bad", ["Traceback ...", "ValueError: bad"]),
        ],
        detail="(waited 2.0 s)",
    )
    text = str(report)
    assert report.failed == [0] and report.running == [1]
    assert text.index("rank 0") < text.index("rank 1")  # rank order, whatever the engine ids
    assert "rank 0 (engine 4): failed with ValueError: bad" in text
    assert "wb.restart()" in text and "collective" in text
    rendered = report._render_traceback_()
    assert rendered[0].startswith("ExecutionTimeout:") and "--- rank 0 ---" in rendered


def test_ranks_failing_alike_show_one_traceback_headed_by_their_ranks():
    same = ["Traceback ...", "ZeroDivisionError: division by zero"]
    report = RankFailure([RankStatus(r, r, "failed", "ZeroDivisionError: division by zero", same) for r in (0, 1, 2, 5)]
                         + [RankStatus(3, 3, "failed", "KeyError: 'x'", ["Traceback ...", "KeyError: 'x'"]),
                            RankStatus(4, 4, "ok")])
    rendered = report._render_traceback_()
    assert rendered.count("ZeroDivisionError: division by zero") == 1
    assert "--- ranks 0-2, 5 ---" in rendered and "--- rank 3 ---" in rendered
    assert rendered.index("--- ranks 0-2, 5 ---") < rendered.index("--- rank 3 ---")  # in order of the first rank
    assert "rank 5 (engine 5): failed with ZeroDivisionError" in rendered[0]  # the per-rank lines stay


def test_rank_sets_are_written_with_ranges():
    assert ranks_text([3]) == "rank 3"
    assert ranks_text([1, 0]) == "ranks 0, 1"
    assert ranks_text([0, 1, 2, 4, 6, 7, 8, 9]) == "ranks 0-2, 4, 6-9"


def test_slow_but_healthy_timeout_suggests_raising_the_limit():
    text = str(ExecutionTimeout([RankStatus(0, 0, "running")]))
    assert "wb.timeout" in text


def test_failure_report():
    failure = RankFailure([RankStatus(0, 0, "ok"), RankStatus(1, 1, "failed", "KeyError: 'x'")])
    assert failure.failed == [1] and failure.running == []
    assert "rank 1 (engine 1): failed with KeyError: 'x'" in str(failure)


def test_the_panels_attach_line_with_no_profile_says_how_to_make_one():
    # a new user has no ipcluster profile: the line said "profile —: no cluster running" beside the
    # session's own running world
    assert "mpiworkbench profile create" in profile_status(None) and "no cluster running" not in profile_status(None)


def test_panel_html_lists_ranks_and_flags_oversubscription():
    ranks = [{"rank": r, "host": "h<1>", "pid": 100 + r, "thread_level": "multiple"} for r in range(3)]
    env = {"library": "MPICH 5", "mpi_standard": "5.0", "packages": {"mpi4py": "4.1"}, "thread_level": "multiple",
           "cores": 2, "np": 3, "oversubscribed": True}
    html = status_html("running", ranks, env, {0: 7, 1: 8, 2: 9})
    assert html.count("<tr>") == 4 and "<td>7</td><td>0</td>" in html
    assert "h&lt;1&gt;" in html and "oversubscribed" in html


def test_workbench_validates_before_starting_anything():
    from mpiworkbench import Workbench
    with pytest.raises(ValueError, match="exceeds the .* cores"):
        Workbench(n=10_000)
    wb = Workbench(n=1)
    assert wb.state == "stopped" and wb.cluster_id.startswith("mpiwb-")
    assert Workbench(n=1).cluster_id != wb.cluster_id  # two notebooks never share engines
    with pytest.raises(RuntimeError, match="call wb.start"):
        wb.run(print)


def test_transport_is_chosen_when_mpiexec_starts_the_ranks(monkeypatch, capsys):
    from mpiworkbench.core import launch

    network = launch.TRANSPORTS["network"]
    assert network["MPIR_CVAR_NOLOCAL"] == "1" and network["UCX_TLS"] == "tcp,self"
    for name in network:
        monkeypatch.delenv(name, raising=False)
    assert launch.transport() == "auto"
    *first, last = network.items()
    for name, value in first:
        monkeypatch.setenv(name, value)
    assert launch.transport() == "auto", "every variable of a transport, or it is not that one"
    monkeypatch.setenv(*last)
    assert launch.transport() == "network"
    with pytest.raises(ValueError, match=r"unknown transport 'infiniband'.*auto, network"):
        launch.run_under_mpiexec(2, ["info"], transport="infiniband")
    # inside ranks already started (here: as if by mpiexec) the transport cannot change any more
    monkeypatch.delenv(last[0])
    monkeypatch.setenv("PMI_SIZE", "1")
    assert main(["info", "--transport", "network"]) == 2
    err = capsys.readouterr().err
    assert "--transport network must be chosen when mpiexec starts the ranks" in err and "-genv UCX_TLS tcp,self" in err
