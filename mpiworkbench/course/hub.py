"""A JupyterHub for a class on a Slurm cluster: what ``mpiworkbench hub write`` writes and
``mpiworkbench hub start`` starts.

One directory holds the whole deployment::

    DIR/jupyterhub_config.py      the hub's configuration (below); edit freely
    DIR/jupyter/nbgrader_config.py  the course id and exchange every student's server reads
    DIR/exchange/                 nbgrader's exchange (mode 1777: students submit into it)
    DIR/jupyterhub.sqlite, DIR/jupyterhub_cookie_secret, DIR/proxy.pid   the hub's state

What the configuration does:

* **accounts**: the course's students and teachers log in with their accounts on the machine
  (JupyterHub's PAM authenticator, ``allowed_users``; the teachers are the hub's admins);
* **servers as Slurm jobs**: batchspawner's ``SlurmSpawner`` submits each user's JupyterLab as a
  batch job *as that user* (``sudo -E -u``, or ``runuser`` where there is no sudo: the hub runs as
  root), with the resources of one student: ``--ntasks`` = the MPI ranks of their world, a time
  limit, memory, a partition. The server runs in the job's batch step (no ``srun`` around it),
  so a kernel's ``Workbench()`` takes the job's whole allocation
  (:mod:`mpiworkbench.client.cluster.allocation`): its ranks run on the job's nodes, inside the job;
* **addresses**: the proxy (the only way in, with the hub's login) listens on loopback unless
  told otherwise; the hub's API listens where the compute nodes reach it (``--hub-ip``: the
  head node's address on the cluster network), which the servers on the nodes call back to;
* **nbgrader**: every server reads ``DIR/jupyter/nbgrader_config.py`` (``JUPYTER_CONFIG_PATH``):
  the course id and the exchange, so students fetch and submit from JupyterLab's assignment list;
* **idle culling**: a server with no kernel, terminal or request for ``idle_minutes`` shuts
  itself down (Jupyter Server's ``shutdown_no_activity_timeout``; idle kernels are culled
  first), which ends its job and frees its nodes;
* ``cleanup_servers``: stopping the hub cancels every server's job.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mpiworkbench.course import COURSE_ID

__all__ = ["HubSettings", "write", "proxy_command", "CONFIG_NAME"]

#: The configuration file :func:`write` writes into the hub's directory.
CONFIG_NAME = "jupyterhub_config.py"

#: The batch script of a user's server (batchspawner's Jinja template: ``{{nprocs}}`` etc. are the
#: spawner's ``req_*`` settings). ``exec``: the server is the batch step's process, so ``scancel``
#: and the time limit signal it directly.
BATCH_SCRIPT = """#!/bin/bash
#SBATCH --job-name=jupyterhub-{{username}}
#SBATCH --output={{homedir}}/.jupyterhub-slurm-%j.log
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
#SBATCH --ntasks={{nprocs}}
{% if partition %}#SBATCH --partition={{partition}}
{% endif %}{% if runtime %}#SBATCH --time={{runtime}}
{% endif %}{% if memory %}#SBATCH --mem={{memory}}
{% endif %}{% if options %}#SBATCH {{options}}
{% endif %}
set -eu
{{prologue}}
exec {{cmd}}
"""


@dataclass
class HubSettings:
    """What a class's hub is configured with (the ``mpiworkbench hub write`` options)."""

    directory: Path
    students: tuple[str, ...]
    teachers: tuple[str, ...] = ()
    ip: str = "127.0.0.1"
    port: int = 8000
    hub_ip: str = "127.0.0.1"
    hub_port: int = 8081
    proxy_api_port: int = 8001
    ranks: int = 2
    runtime: str = "01:00:00"
    memory: str = ""
    partition: str = ""
    idle_minutes: int = 30
    course_id: str = COURSE_ID
    options: str = ""
    env_keep: tuple[str, ...] = field(default=("PATH", "LANG", "SLURM_CONF"))
    #: JupyterLab's application settings for every server (``--LabApp.app_settings_dir``), e.g.
    #: :func:`mpiworkbench.cli.lab.lab_settings`'s (no news pop-up); ``None``: JupyterLab's own.
    lab_settings_dir: Path | None = None

    def check(self) -> None:
        if not self.students:
            raise ValueError("a class needs students: --students alice,bob")
        for name in (*self.students, *self.teachers):
            if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
                raise ValueError(f"user names are account names like 'alice'; got {name!r}")
        if self.ranks < 1:
            raise ValueError(f"--ranks {self.ranks}: each student's world needs at least 1 rank")
        if self.idle_minutes < 1:
            raise ValueError(f"--idle-minutes {self.idle_minutes}: at least 1")


def proxy_command() -> str:
    """The ``configurable-http-proxy`` to run: the one npm installed into this environment's
    ``node/`` prefix (``npm install --prefix .venv/node configurable-http-proxy``), else the
    one on PATH."""
    beside = Path(sys.prefix, "node", "node_modules", ".bin", "configurable-http-proxy")
    if beside.exists():
        return str(beside)
    found = shutil.which("configurable-http-proxy")
    if found is None:
        raise FileNotFoundError(
            "configurable-http-proxy is not installed: npm install --prefix "
            f"{Path(sys.prefix, 'node')} configurable-http-proxy (Node.js from Debian: apt-get install nodejs npm)")
    return found


def submit_prefix() -> str:
    """How the hub (root) runs ``sbatch``, ``squeue`` and ``scancel`` as the user."""
    return "sudo -E -u {username}" if shutil.which("sudo") else "runuser -u {username} --"


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def config_text(settings: HubSettings) -> str:
    """The ``jupyterhub_config.py`` of *settings*."""
    d = Path(settings.directory).resolve()
    idle_s = settings.idle_minutes * 60
    users = sorted({*settings.students, *settings.teachers})
    lines = [
        "# Written by `mpiworkbench hub write`; edit freely, writing again overwrites it.",
        "c = get_config()  # noqa: F821",
        "",
        "# the only way in: the proxy, on loopback unless told otherwise, with the hub's login",
        f"c.JupyterHub.bind_url = {f'http://{settings.ip}:{settings.port}'!r}",
        "# the hub's API, where the servers on the compute nodes call back to",
        f"c.JupyterHub.hub_bind_url = {f'http://{settings.hub_ip}:{settings.hub_port}'!r}",
        f"c.ConfigurableHTTPProxy.api_url = {f'http://127.0.0.1:{settings.proxy_api_port}'!r}",
        f"c.ConfigurableHTTPProxy.command = [{proxy_command()!r}]",
        f"c.ConfigurableHTTPProxy.pid_file = {str(d / 'proxy.pid')!r}",
        f"c.JupyterHub.db_url = {'sqlite:///' + str(d / 'jupyterhub.sqlite')!r}",
        f"c.JupyterHub.cookie_secret_file = {str(d / 'jupyterhub_cookie_secret')!r}",
        "# stopping the hub cancels every server's job",
        "c.JupyterHub.cleanup_servers = True",
        "",
        "# the course's accounts (their accounts on the machine); teachers administer the hub",
        'c.JupyterHub.authenticator_class = "pam"',
        f"c.Authenticator.allowed_users = {set(users)!r}",
        f"c.Authenticator.admin_users = {set(settings.teachers)!r}",
        "",
        "# each user's JupyterLab is a Slurm job of theirs, with one student's resources",
        'c.JupyterHub.spawner_class = "batchspawner.SlurmSpawner"',
        f"c.SlurmSpawner.exec_prefix = {submit_prefix()!r}",
        f"c.SlurmSpawner.batch_script = {BATCH_SCRIPT!r}",
        "# the server runs in the batch step itself: a kernel's Workbench() takes the whole allocation",
        'c.SlurmSpawner.req_srun = ""',
        f"c.SlurmSpawner.req_nprocs = {str(settings.ranks)!r}  # --ntasks: the ranks of the student's world",
        f"c.SlurmSpawner.req_runtime = {settings.runtime!r}",
        f"c.SlurmSpawner.req_memory = {settings.memory!r}",
        f"c.SlurmSpawner.req_partition = {settings.partition!r}",
        f"c.SlurmSpawner.req_options = {settings.options!r}",
        f"c.SlurmSpawner.batchspawner_singleuser_cmd = {_bin('batchspawner-singleuser')!r}",
        f"c.Spawner.cmd = [{_bin('jupyterhub-singleuser')!r}]",
        'c.Spawner.default_url = "/lab"',
        "c.Spawner.start_timeout = 300",
        "c.Spawner.http_timeout = 120",
        "# passed on to the servers' jobs besides JupyterHub's own list (PATH, LANG, ...)",
        f"c.Spawner.env_keep.extend({list(settings.env_keep)!r})",
        "# the course's nbgrader settings (course id, exchange) for every server",
        f"c.Spawner.environment = {{'JUPYTER_CONFIG_PATH': {str(d / 'jupyter')!r}}}",
        "# idle culling: idle kernels end, then a server idle this long shuts down and its job ends",
        "c.Spawner.args = [",
        f"    '--ServerApp.shutdown_no_activity_timeout={idle_s}',",
        f"    '--MappingKernelManager.cull_idle_timeout={idle_s}',",
        "    '--MappingKernelManager.cull_interval=60',",
        "]",
    ]
    if settings.lab_settings_dir is not None:
        lines += ["# JupyterLab's settings for the class (as `mpiworkbench lab` gives its own: no news pop-up)",
                  f"c.Spawner.args.append({f'--LabApp.app_settings_dir={Path(settings.lab_settings_dir).resolve()}'!r})"]
    return "\n".join(lines) + "\n"


def nbgrader_text(settings: HubSettings) -> str:
    """The ``nbgrader_config.py`` every server reads: the course and its exchange."""
    exchange = Path(settings.directory).resolve() / "exchange"
    return ("# Written by `mpiworkbench hub write`: what every user's server knows of the course.\n"
            "c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {settings.course_id!r}\n"
            f"c.Exchange.root = {str(exchange)!r}\n")


def write(settings: HubSettings) -> Path:
    """Write the hub's directory (see the module's docstring); return its configuration file."""
    settings.check()
    d = Path(settings.directory)
    (d / "jupyter").mkdir(parents=True, exist_ok=True)
    exchange = d / "exchange"
    exchange.mkdir(exist_ok=True)
    os.chmod(exchange, 0o1777)  # nbgrader's exchange: every student submits into it
    for path in (d, d / "jupyter"):  # the servers, run as the students, read the course's settings
        os.chmod(path, 0o755)
    (d / "jupyter" / "nbgrader_config.py").write_text(nbgrader_text(settings))
    config = d / CONFIG_NAME
    config.write_text(config_text(settings))
    return config
