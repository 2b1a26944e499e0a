"""``mpiworkbench hub write DIR …`` and ``mpiworkbench hub start DIR``: a JupyterHub for a class,
each user's JupyterLab a Slurm job of theirs (:mod:`mpiworkbench.course.hub`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from mpiworkbench.cli.lab import lab_settings
from mpiworkbench.course import hub


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "hub",
        help="write and start a JupyterHub for a class: servers as Slurm jobs, nbgrader, idle culling",
        description="A JupyterHub for a class on a Slurm cluster. `write` writes its directory (the "
        "configuration: local accounts, batchspawner's SlurmSpawner with one student's resources, the "
        "nbgrader exchange, idle culling); `start` runs JupyterHub on it (as root: it submits each user's "
        "server as that user). Needs the `hub` extra (jupyterhub, batchspawner) and configurable-http-proxy "
        "from npm.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    write = actions.add_parser("write", help="write the hub's directory")
    write.add_argument("directory", metavar="DIR")
    write.add_argument("--students", required=True, metavar="NAMES", help="comma-separated account names")
    write.add_argument("--teachers", default="", metavar="NAMES", help="comma-separated account names (the admins)")
    write.add_argument("--ip", default="127.0.0.1", help="where the proxy listens (default: loopback)")
    write.add_argument("--port", type=int, default=8000, help="the proxy's port (default 8000)")
    write.add_argument("--hub-ip", default="127.0.0.1",
                       help="where the hub's API listens: an address the compute nodes reach (default loopback: "
                       "only servers on this host could call back)")
    write.add_argument("--hub-port", type=int, default=8081)
    write.add_argument("--proxy-api-port", type=int, default=8001)
    write.add_argument("--ranks", type=int, default=2, help="Slurm tasks per server: the ranks of each user's world")
    write.add_argument("--runtime", default="01:00:00",
                       help="each server's time limit (sbatch --time); a notebook's MPI world is stopped a "
                       "minute before it, the running cell saying so")
    write.add_argument("--memory", default="", help="each server's memory (sbatch --mem), e.g. 4G")
    write.add_argument("--partition", default="", help="the Slurm partition of the servers")
    write.add_argument("--idle-minutes", type=int, default=30,
                       help="a server idle this long shuts down and frees its nodes (default 30)")
    write.add_argument("--course-id", default=hub.COURSE_ID, help="nbgrader's course id")
    write.set_defaults(func=run_write)
    start = actions.add_parser("start", help="run JupyterHub on a written directory (in the foreground)")
    start.add_argument("directory", metavar="DIR")
    start.set_defaults(func=run_start)


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def run_write(args: argparse.Namespace) -> int:
    settings = hub.HubSettings(
        Path(args.directory), _names(args.students), _names(args.teachers), ip=args.ip, port=args.port,
        hub_ip=args.hub_ip, hub_port=args.hub_port, proxy_api_port=args.proxy_api_port, ranks=args.ranks,
        runtime=args.runtime, memory=args.memory, partition=args.partition, idle_minutes=args.idle_minutes,
        course_id=args.course_id)
    # the servers' JupyterLab as `mpiworkbench lab` sets its own up, nbgrader's assignment list kept
    settings.lab_settings_dir = lab_settings(Path(args.directory) / "lab", course=True)
    config = hub.write(settings)
    print(f"wrote {config}; start it with: mpiworkbench hub start {args.directory}")
    return 0


def run_start(args: argparse.Namespace) -> int:
    directory = Path(args.directory).resolve()
    config = directory / hub.CONFIG_NAME
    if not config.exists():
        raise FileNotFoundError(f"{config} does not exist: write it first with `mpiworkbench hub write {args.directory} ...`")
    jupyterhub = Path(sys.executable).with_name("jupyterhub")
    if not jupyterhub.exists():
        raise FileNotFoundError(f"{jupyterhub} is not installed: pip install 'mpiworkbench[hub]'")
    # the hub takes this process's place: its pid is the one to stop
    os.chdir(directory)
    os.execv(str(jupyterhub), [str(jupyterhub), "-f", str(config)])
