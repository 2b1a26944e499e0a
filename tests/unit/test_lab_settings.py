"""``mpiworkbench lab``'s own settings directory, read back by JupyterLab's own readers: no "news"
question, nbgrader's lab extension off unless a course is taught, and the environment's own
settings kept. (That the page then shows neither: ``tests/browser/test_start_here.py``.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from jupyter_core.paths import jupyter_path
from jupyterlab_server.config import get_page_config
from jupyterlab_server.settings_utils import _get_overrides

from mpiworkbench.cli import lab
from mpiworkbench.cli.lab import NBGRADER_LABEXTENSION, lab_settings

NOTIFICATION = "@jupyterlab/apputils-extension:notification"


def disabled(settings: Path) -> dict:
    return get_page_config(jupyter_path("labextensions"), str(settings))["disabledExtensions"]


def test_the_plain_lab_asks_no_news_question_and_shows_no_nbgrader(tmp_path):
    settings = lab_settings(tmp_path)
    overrides, error = _get_overrides(str(settings))
    assert error == "" and overrides[NOTIFICATION]["fetchNews"] == "false"
    assert NBGRADER_LABEXTENSION in disabled(settings)


def test_a_course_lab_shows_nbgrader(tmp_path):
    settings = lab_settings(tmp_path, course=True)
    assert NBGRADER_LABEXTENSION not in disabled(settings)
    assert _get_overrides(str(settings))[0][NOTIFICATION]["fetchNews"] == "false"


def test_the_environments_own_settings_are_kept_and_win(tmp_path, monkeypatch):
    app_dir = tmp_path / "app"
    (app_dir / "settings").mkdir(parents=True)
    (app_dir / "settings" / "page_config.json").write_text(json.dumps({"disabledExtensions": ["some-extension"]}))
    (app_dir / "settings" / "overrides.json").write_text(json.dumps({NOTIFICATION: {"fetchNews": "true"}}))
    monkeypatch.setattr("jupyterlab.commands.get_app_dir", lambda: str(app_dir))
    settings = lab_settings(tmp_path / "lab")
    assert {"some-extension", NBGRADER_LABEXTENSION} <= set(disabled(settings))
    assert _get_overrides(str(settings))[0][NOTIFICATION]["fetchNews"] == "true"  # the environment's choice


@pytest.mark.parametrize(("course_flag", "course_dir", "shown"), [(False, False, False), (True, False, True),
                                                                  (False, True, True)])
def test_the_lab_command_shows_nbgrader_only_for_a_course(tmp_path, monkeypatch, course_flag, course_dir, shown):
    served = tmp_path / "served"
    served.mkdir()
    if course_dir:
        (served / lab.COURSE_MARK).write_text("# written by mpiworkbench course\n")
    seen = {}

    def call(cmd, env):
        settings = Path(next(a for a in cmd if a.startswith("--LabApp.app_settings_dir=")).split("=", 1)[1])
        seen["disabled"] = disabled(settings)
        return 0

    monkeypatch.setattr(lab.subprocess, "call", call)
    args = argparse.Namespace(notebook_dir=str(served), ip="127.0.0.1", port=8888, no_browser=True, course=course_flag)
    assert lab.run(args) == 0
    assert (NBGRADER_LABEXTENSION not in seen["disabled"]) == shown, seen
