"""The lab part on its own (issue 59): the wheel ``mpiworkbench lab-part wheel`` writes installs with
pip into a prefix, and its server extension imports there without the rest of the workbench."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mpiworkbench import lab
from mpiworkbench.cli.labpart import PACKAGE, build_wheel

built = pytest.mark.skipif(not (Path(lab.__file__).parent / "labextension" / "package.json").is_file(),
                                reason="the lab extension is not built (make labextension)")


@built
def test_the_wheel_installs_and_its_server_extension_needs_nothing_of_the_workbench(tmp_path):
    wheel = build_wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = archive.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
    assert all(name in record for name in names), "every file is in the RECORD pip checks"
    prefix = tmp_path / "prefix"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--prefix", str(prefix),
                          str(wheel)], capture_output=True, text=True, timeout=300)
    assert pip.returncode == 0, pip.stderr
    site = next(prefix.glob("lib/python*/site-packages"))
    assert (prefix / "share/jupyter/labextensions" / lab.LABEXTENSION_NAME / "package.json").is_file()
    config = json.loads((prefix / f"etc/jupyter/jupyter_server_config.d/{PACKAGE}.json").read_text())
    assert config["ServerApp"] == {"jpserver_extensions": {PACKAGE: True}}
    # the installed package alone (isolated from this checkout): its extension points and server import,
    # and nothing of mpiworkbench comes with them
    probe = ("import sys, mpiworkbench_lab, mpiworkbench_lab.server as s\n"
             "print(mpiworkbench_lab._jupyter_server_extension_points()[0]['module'], s.WORLDS_PATH,\n"
             "      any(m == 'mpiworkbench' or m.startswith('mpiworkbench.') for m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["mpiworkbench_lab.server", "mpiworkbench/worlds", "False"], out.stdout


def test_install_refuses_a_python_without_a_jupyter_server(tmp_path):
    from mpiworkbench.cli import main

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=300)
    assert main(["lab-part", "install", "--python", str(bare / "bin" / "python")]) == 2


def test_the_ondemand_app_is_copied_into_a_new_folder_only(tmp_path, capsys):
    from mpiworkbench.cli import main

    target = tmp_path / "apps" / "mpiworkbench"
    assert main(["lab-part", "ondemand", "--dir", str(target)]) == 0
    assert (target / "form.yml").is_file() and os.access(target / "template" / "script.sh.erb", os.X_OK)
    assert main(["lab-part", "ondemand", "--dir", str(target)]) == 2
    assert "exists already" in capsys.readouterr().err


def test_the_config_block_replaces_its_earlier_self_and_keeps_the_users_lines(tmp_path):
    from mpiworkbench.cli.labpart import BLOCK_BEGIN, BLOCK_END, config_block, with_block

    mine = "c.ServerApp.root_dir = '/scratch'  # the user's own\n"
    once = with_block(mine, config_block(tmp_path / "old"))
    twice = with_block(once + "c.ServerApp.port = 9999\n", config_block(tmp_path / "new"))
    assert twice.startswith(mine) and twice.endswith("c.ServerApp.port = 9999\n"), twice
    assert twice.count(BLOCK_BEGIN) == twice.count(BLOCK_END) == 1
    assert str(tmp_path / "new") in twice and str(tmp_path / "old") not in twice


# The block run by a Python without the workbench (-S: no site-packages), on a stand-in for
# traitlets' config object that records what the block asks of it.
RUN_BLOCK = """
import sys
class Calls:
    def __init__(self, name): self.name = name
    def __getattr__(self, attr): return Calls(self.name + '.' + attr)
    def __call__(self, *args): print(self.name, *args)
c = Calls('c')
exec(sys.stdin.read())
print('path has it:', sys.argv[1] in sys.path)
"""


@pytest.mark.parametrize("present", [True, False])
def test_the_config_block_hands_the_folder_to_a_lab_without_its_own_lab_part(tmp_path, present):
    from mpiworkbench.cli.labpart import config_block

    folder = tmp_path / "mpiworkbench-lab"
    if present:
        (folder / PACKAGE).mkdir(parents=True)
    out = subprocess.run([sys.executable, "-I", "-S", "-c", RUN_BLOCK, str(folder)], input=config_block(folder),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    if present:
        assert f"c.ServerApp.jpserver_extensions.update {{'{PACKAGE}': True}}" in out.stdout
        assert f"c.LabApp.extra_labextensions_path.append {folder}/share/jupyter/labextensions" in out.stdout
        assert "path has it: True" in out.stdout
    else:  # the folder removed: the block does nothing
        assert out.stdout.strip() == "path has it: False", out.stdout
    # the workbench's own environment has its lab part: there the block does nothing either
    own = subprocess.run([sys.executable, "-c", RUN_BLOCK, str(folder)], input=config_block(folder),
                         capture_output=True, text=True, timeout=120)
    assert own.stdout.strip() == "path has it: False", own.stdout + own.stderr
