"""``mpiworkbench lab``: JupyterLab on the teaching notebooks, on loopback.

The lab has application settings of its own (JupyterLab's ``LabApp.app_settings_dir``, a temporary
directory that lives as long as the lab): the default ones, plus no "news" question on first
contact and, unless a course is taught, none of nbgrader's menus and panels. A user's own settings
and ``jupyter labextension enable`` still win over these defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: nbgrader's JupyterLab extension (its menu, Formgrader, Assignments, Courses, Validate): the
#: ``course`` extra installs it, and a lab shows it only where a course is taught.
NBGRADER_LABEXTENSION = "@jupyter/nbgrader"
#: Defaults of the lab's settings (a user's own settings override them): no pop-up asking whether
#: to fetch Jupyter's news (and with it no update check).
SETTINGS_OVERRIDES = {"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}
#: What marks a directory as an nbgrader course (``mpiworkbench course`` writes it).
COURSE_MARK = "nbgrader_config.py"


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="open JupyterLab on the notebooks (127.0.0.1)",
        description="Start JupyterLab on the notebooks directory, listening on loopback only unless --ip says otherwise.",
    )
    parser.add_argument("--notebook-dir", default=None, help="directory to serve (default: ./notebooks if it exists, else .)")
    parser.add_argument("--ip", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8888, help="port (default: 8888; the next free one is used if taken)")
    parser.add_argument("--no-browser", action="store_true", help="do not try to open a web browser")
    parser.add_argument("--course", action="store_true",
                        help="show nbgrader's menus and panels (teaching a course; on by itself when the directory "
                        f"served is a course written by `mpiworkbench course`, which holds {COURSE_MARK})")
    parser.set_defaults(func=run)


def lab_settings(directory: Path, course: bool = False) -> Path:
    """Write the lab's application settings into *directory*; return the path to give JupyterLab
    as ``--LabApp.app_settings_dir``.

    It holds what JupyterLab's default settings directory holds, plus :data:`SETTINGS_OVERRIDES`
    (in ``overrides.d/``, below an ``overrides.json`` of the environment's own) and, unless
    *course*, :data:`NBGRADER_LABEXTENSION` in ``page_config.json``'s ``disabledExtensions``
    (the lowest level of page config: ``jupyter labextension enable`` still enables it).
    """
    from jupyterlab.commands import get_app_dir  # import cost: JupyterLab only when a lab starts
    from jupyterlab_server.config import load_config

    app_dir = Path(get_app_dir())
    settings = directory / "settings"
    if (app_dir / "settings").is_dir():
        shutil.copytree(app_dir / "settings", settings, dirs_exist_ok=True)
    settings.mkdir(parents=True, exist_ok=True)
    if (app_dir / "static").is_dir() and not (directory / "static").exists():
        # JupyterLab reads the built application's extension metadata beside the settings directory
        (directory / "static").symlink_to(app_dir / "static", target_is_directory=True)
    (settings / "overrides.d").mkdir(exist_ok=True)
    (settings / "overrides.d" / "mpiworkbench.json").write_text(json.dumps(SETTINGS_OVERRIDES, indent=2))
    if not course:
        page = next((p for p in (settings / "page_config.json5", settings / "page_config.json")
                     if p.exists() and p.stat().st_size), None)
        config = load_config(str(page)) if page else {}
        disabled = config.get("disabledExtensions") or {}
        if isinstance(disabled, list):
            disabled = {name: True for name in disabled}
        config["disabledExtensions"] = {**disabled, NBGRADER_LABEXTENSION: True}
        (settings / "page_config.json5").unlink(missing_ok=True)  # read before page_config.json
        (settings / "page_config.json").write_text(json.dumps(config, indent=2))
    return settings


def lab_command(notebook_dir: Path, ip: str, port: int, no_browser: bool, settings_dir: Path | None = None) -> list[str]:
    """The command that starts JupyterLab on *notebook_dir*; with the application settings
    directory *settings_dir* (:func:`lab_settings`) when given."""
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={notebook_dir}",
        # every rank opened for debugging (wb.connection_file, wb.debug, %%px --debug) is listed
        # as a running kernel: a console on it and the Debugger sidebar debug that rank
        "--ServerApp.allow_external_kernels=True",
    ]
    if settings_dir is not None:
        cmd.append(f"--LabApp.app_settings_dir={settings_dir}")
    if no_browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI machines often run as root
    return cmd


def run(args: argparse.Namespace) -> int:
    notebook_dir = Path(args.notebook_dir) if args.notebook_dir else (Path("notebooks") if Path("notebooks").is_dir() else Path("."))
    if not notebook_dir.is_dir():
        raise FileNotFoundError(f"notebook directory {str(notebook_dir)!r} does not exist; pass --notebook-dir")
    # Engines started from the notebooks find mpiexec beside this Python; make sure the
    # kernel and its children see the venv first on PATH too.
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    course = args.course or (notebook_dir / COURSE_MARK).is_file()
    print(f"JupyterLab on {notebook_dir.resolve()} at http://{args.ip}:{args.port}/lab (the exact URL with its token follows)"
          + ("; nbgrader's menus and panels shown (a course)" if course else ""))
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-lab-") as directory:
        settings = lab_settings(Path(directory), course=course)
        return subprocess.call(lab_command(notebook_dir.resolve(), args.ip, args.port, args.no_browser, settings), env=env)
