"""``mpiworkbench info [--json FILE]``: the MPI environment this workbench runs in."""

from __future__ import annotations

import argparse

from mpiworkbench import backends
from mpiworkbench.cli import _mpijob


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "info",
        help="MPI library, versions, thread level, cores, backends",
        description="Describe the MPI environment: library and version, package versions, "
        "thread level, cores and which communication backends are available.",
    )
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the facts as JSON ('-' for stdout)")
    _mpijob.add_mpi_arguments(parser)
    parser.set_defaults(func=run)


def format_environment(env: dict) -> str:
    lines = [
        f"mpiworkbench   {env['mpiworkbench']}",
        f"python         {env['python']} on {env['platform']}",
        f"MPI library    {env['library']} (MPI standard {env['mpi_standard']})",
        f"thread level   {env['thread_level']}",
        f"ranks / cores  {env['np']} / {env.get('cores_available', env['cores'])}" + ("  (oversubscribed)" if env["oversubscribed"] else ""),
    ]
    lines += [f"{name:<14} {version or 'not installed'}" for name, version in env["packages"].items()]
    for name, state in env.get("backends", {}).items():
        lines.append(f"backend        {name}: {'available' if state is True else state}")
    for name, state in env.get("implementations", {}).items():
        running = "  (this job)" if name == env.get("mpi") else ""
        lines.append(f"MPI            {name}: {state}{running}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    def body(comm) -> int:
        env = backends.environment(comm)
        if comm.rank == 0:
            print(format_environment(env))
            _mpijob.write_json(args.json, env)
        return 0

    return _mpijob.run(args, body)
