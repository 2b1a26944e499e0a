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
