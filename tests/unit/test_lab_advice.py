"""Without the lab part in the lab's environment, the kernel side says what works (issue 59, item 2):
the command that adds the sidebar names the Python of the lab this user runs, and the console path
for each rank; with a lab part's marker of a live server, nothing is said."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpiworkbench.client.calls import lab_advice
from mpiworkbench.lab import protocol


@pytest.fixture
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(lab_advice, "in_a_kernel", lambda: True)  # (what a notebook's kernel is)
    return tmp_path


def test_a_script_outside_a_kernel_is_told_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    assert not lab_advice.in_a_kernel() and lab_advice.advice({0: tmp_path / "x.json"}) == ""


def test_no_lab_part_names_the_install_command_with_the_labs_python_and_the_console_path(runtime, tmp_path):
    # a "lab" of another environment: a process started by a Python path, with jupyter_server's record
    lab_python = Path(sys.executable)
    lab = subprocess.Popen([str(lab_python), "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert lab.stdout.readline() == b"up\n"  # started (its command line is its own, not ours being forked)
        (runtime / f"jpserver-{lab.pid}.json").write_text(json.dumps({"pid": lab.pid, "port": 8888}))
        said = lab_advice.advice({1: tmp_path / "rank1.json"})
    finally:
        lab.communicate(b"")
    assert "shows the MPI world sidebar" in said and said.startswith("No JupyterLab"), said
    assert f"-m mpiworkbench lab-part install --python {lab_python}" in said, said
    assert f"{sys.executable} -m jupyter_console --existing {tmp_path / 'rank1.json'}" in said, said
    assert "(rank 1's kernel)" in said, said
    # the named Python is the lab's as started (a venv's bin/python), not the interpreter it links to
    assert lab_advice.lab_pythons() == []  # that lab ended: its record no longer counts


def test_a_live_lab_part_means_nothing_to_say_and_a_dead_ones_marker_does_not_count(runtime):
    protocol.write_marker(runtime, {"external_kernels": True})
    assert lab_advice.sidebar_shown() and lab_advice.advice({0: Path("x.json")}) == ""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (runtime / f"{protocol.MARKER_PREFIX}{os.getpid()}.json").unlink()
    protocol.marker_path(runtime, int(gone.stdout)).write_text(json.dumps({"pid": int(gone.stdout), "external_kernels": True}))
    assert not lab_advice.sidebar_shown()
    assert "LAB_PYTHON" in lab_advice.install_line()  # no lab runs: a placeholder, and how to fill it in
