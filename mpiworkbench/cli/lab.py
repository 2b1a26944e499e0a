"""``mpiworkbench lab``: JupyterLab on the teaching notebooks, on loopback."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


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
    parser.set_defaults(func=run)


def lab_command(notebook_dir: Path, ip: str, port: int, no_browser: bool) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.ip={ip}",
        f"--ServerApp.port={port}",
        f"--ServerApp.root_dir={notebook_dir}",
    ]
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
    print(f"JupyterLab on {notebook_dir.resolve()} at http://{args.ip}:{args.port}/lab (the exact URL with its token follows)")
    return subprocess.call(lab_command(notebook_dir.resolve(), args.ip, args.port, args.no_browser), env=env)
