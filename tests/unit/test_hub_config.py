"""``mpiworkbench hub write``: the class's JupyterHub directory (``mpiworkbench.course.hub``), read
back as JupyterHub reads it (a traitlets config file). The hub itself, on the simulated cluster,
is ``tests/cluster/test_hub.py``."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from traitlets.config import Config, PyFileConfigLoader

from mpiworkbench.cli import main
from mpiworkbench.course import hub


def _load(path: Path) -> Config:
    return PyFileConfigLoader(path.name, str(path.parent)).load_config()


@pytest.fixture
def proxy(monkeypatch, tmp_path):
    """A configurable-http-proxy where the venv's npm prefix has it (the file need not run here)."""
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    found = tmp_path / "venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
    found.parent.mkdir(parents=True)
    found.write_text("")
    return found


def test_hub_write_gives_a_class_hub_on_loopback_with_slurm_servers(proxy, tmp_path, capsys):
    directory = tmp_path / "class"
    assert main(["hub", "write", str(directory), "--students", "alice,bob", "--teachers", "carol",
                 "--hub-ip", "10.0.0.1", "--ranks", "3", "--runtime", "02:00:00", "--memory", "4G",
                 "--partition", "teaching", "--idle-minutes", "20"]) == 0
    assert f"mpiworkbench hub start {directory}" in capsys.readouterr().out
    c = _load(directory / hub.CONFIG_NAME)
    assert c.JupyterHub.bind_url == "http://127.0.0.1:8000"  # the proxy: loopback unless told
    assert c.JupyterHub.hub_bind_url == "http://10.0.0.1:8081"  # where the nodes call back
    assert c.ConfigurableHTTPProxy.command == [str(proxy)]
    assert c.JupyterHub.authenticator_class == "pam" and c.JupyterHub.cleanup_servers is True
    assert c.Authenticator.allowed_users == {"alice", "bob", "carol"} and c.Authenticator.admin_users == {"carol"}
    assert c.JupyterHub.spawner_class == "batchspawner.SlurmSpawner"
    assert (c.SlurmSpawner.req_nprocs, c.SlurmSpawner.req_runtime, c.SlurmSpawner.req_memory,
            c.SlurmSpawner.req_partition, c.SlurmSpawner.req_srun) == ("3", "02:00:00", "4G", "teaching", "")
    assert "#SBATCH --ntasks={{nprocs}}" in c.SlurmSpawner.batch_script and "exec {{cmd}}" in c.SlurmSpawner.batch_script
    assert "{username}" in c.SlurmSpawner.exec_prefix
    assert "--ServerApp.shutdown_no_activity_timeout=1200" in c.Spawner.args
    assert c.Spawner.environment == {"JUPYTER_CONFIG_PATH": str((directory / "jupyter").resolve())}
    assert any(arg.startswith("--LabApp.app_settings_dir=") for arg in c.Spawner.args)
    exchange = directory / "exchange"
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777
    course = _load(directory / "jupyter" / "nbgrader_config.py")
    assert course.CourseDirectory.course_id == hub.COURSE_ID
    assert course.Exchange.root == str(exchange.resolve())


@pytest.mark.parametrize("argv,said", [
    (["--students", ""], "a class needs students"),
    (["--students", "alice;rm"], "user names are account names"),
    (["--students", "alice", "--ranks", "0"], "--ranks 0"),
])
def test_hub_write_refuses_what_makes_no_class(proxy, tmp_path, capsys, argv, said):
    assert main(["hub", "write", str(tmp_path / "class"), *argv]) == 2
    assert said in capsys.readouterr().err


def test_without_the_proxy_it_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "venv"))
    monkeypatch.setattr(hub.shutil, "which", lambda name: None)
    with pytest.raises(FileNotFoundError, match="npm install --prefix .*configurable-http-proxy"):
        hub.proxy_command()


def test_hub_start_needs_a_written_directory(tmp_path, capsys):
    assert main(["hub", "start", str(tmp_path / "nothing")]) == 2
    assert "write it first with `mpiworkbench hub write" in capsys.readouterr().err
