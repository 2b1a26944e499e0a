"""IPython cluster profiles, so ``ipcluster start -n 4 --profile=mpi`` starts MPI engines.

Launchers are plugged in by short name (ipyparallel's own names). Each entry says which
ipyparallel launcher starts the engines and any settings it needs; a Slurm, PBS or SSH
profile is one more entry here, not new machinery. ``slurm`` submits the engines as one
batch job whose ranks form the MPI world; the cluster tier tests it on a private single-node
Slurm (``tests/cluster/slurm.py``).
"""

from __future__ import annotations

import os
import shlex
import warnings
from pathlib import Path

from mpiworkbench.client.cluster import controller
from mpiworkbench.client.cluster.attach import ipython_dir
from mpiworkbench.client.cluster.start import HEARTBEAT_MISSES, HEARTBEAT_MS, engine_heartbeat_misses, hub_database_settings
from mpiworkbench.client.cluster.engine_start import ENGINE_CMD
from mpiworkbench.core import implementations
from mpiworkbench.core.launch import world_launch
from mpiworkbench.trace.library import mpiexec_args

#: Launcher name → extra ``ipcluster_config.py`` lines for it (``{mpi_cmd}``, the mpiexec command,
#: ``{engine_cmd}``, what each rank runs,
#: ``{preload}``, the interposer's mpiexec arguments, and ``{environment}``, the MPI
#: implementation's variables, are filled in as Python literals, ``{mpi_cmd_sh}``,
#: ``{preload_sh}`` and ``{environment_sh}`` as shell words; literal braces are doubled).
LAUNCHERS: dict[str, list[str]] = {
    "mpi": [
        'c.Cluster.engine_launcher_class = "mpi"',
        "# the mpiexec of the MPI implementation the profile is for (the venv's own, the mpich",
        "# wheel's, unless `profile create --mpi` said otherwise), so launcher and library match",
        "c.MPILauncher.mpi_cmd = {mpi_cmd!r}",
        "# what its ranks need to load that library (mpi4py's MPI4PY_LIBMPI, ...)",
        "c.MPIEngineSetLauncher.environment = {environment!r}",
        "# every rank runs with mpiworkbench's MPI interposer preloaded (traces, hang reports)",
        "c.MPIEngineSetLauncher.mpi_args = {preload!r}",
        "# each engine forks its nanny instead of starting a second Python for it (0.14 s of CPU",
        "# per engine): ipengine, started by mpiworkbench.client.cluster.engine_start",
        "c.MPIEngineSetLauncher.engine_cmd = {engine_cmd!r}",
    ],
    "slurm": [
        'c.Cluster.engine_launcher_class = "slurm"',
        "# One Slurm job holds the whole MPI world: --ntasks=n, the ranks started by the mpiexec",
        "# beside this Python (MPICH's Hydra starts them inside the job's allocation through srun).",
        "# The controller runs where ipcluster runs; the engines must be able to reach its --ip.",
        "# The job's output goes to the profile's log/ (ipcluster shows it from there), not to",
        "# slurm-<job>.out in the current directory, and so does the batch script (a restart from",
        "# a notebook would otherwise write it into the notebook's directory).",
        "import os",
        'c.SlurmEngineSetLauncher.batch_file_name = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log", "slurm_engine.sbatch")',
        "# each rank: ipengine, started by mpiworkbench.client.cluster.engine_start (its kernel debuggable)",
        "c.SlurmEngineSetLauncher.engine_cmd = {engine_cmd!r}",
        "# every rank runs with mpiworkbench's MPI interposer preloaded (traces, hang reports);",
        "# its library must be readable at the same path on the compute nodes",
        'c.SlurmEngineSetLauncher.batch_template = """#!/bin/sh',
        "#SBATCH --export=ALL",
        "#SBATCH --job-name=ipengine-{{cluster_id}}",
        "#SBATCH --ntasks={{n}}",
        "#SBATCH --output={{output_file}}",
        "export {environment_sh}",
        "{mpi_cmd_sh} {preload_sh} -n {{n}} {{program_and_args}}",
        '"""',
        "# your site's settings, e.g.:",
        '# c.SlurmEngineSetLauncher.queue = "partition"',
        '# c.SlurmEngineSetLauncher.account = "project"',
        '# c.SlurmEngineSetLauncher.timelimit = "01:00:00"',
    ],
}
#: Launchers whose engines may run on other hosts than the controller.
REMOTE_ENGINES = frozenset({"slurm"})

_HEADER = "# Written by `mpiworkbench profile create`; edit freely, re-running overwrites it.\n"


#: Addresses that reach only this host.
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def profile_name(mpi: str | None = None) -> str:
    """The default profile name for MPI implementation *mpi*: ``mpi`` for the venv's own
    (``mpich``), ``mpi-<name>`` for another (``mpi-openmpi``, ``mpi-impi``)."""
    impl = implementations.get(mpi or implementations.DEFAULT)
    return "mpi" if impl.name == implementations.DEFAULT else f"mpi-{impl.name}"


def create_profile(name: str = "mpi", launcher: str = "mpi", ip: str = "127.0.0.1",
                   ipython_dir_: str | os.PathLike | None = None, encrypt: bool | None = None,
                   mpi: str | None = None) -> Path:
    """Write ``profile_<name>`` (ipcluster, ipcontroller and ipengine configs); return its path.

    *mpi*: the MPI implementation its engines run under (:mod:`mpiworkbench.core.implementations`;
    default ``$MPIWORKBENCH_MPI``, else ``mpich``); it must be installed.

    *ip*: the interface the controller listens on (loopback by default). Every message is signed
    with the key of the cluster's connection files (HMAC-SHA256, files of mode 600): a process
    without it gets nothing executed. With *encrypt* (default: when *ip* is not loopback) the
    traffic is also encrypted with CurveZMQ, ipyparallel's option, the controller's key taking
    the place of the signing key: a client without the connection file cannot connect.
    """
    if launcher not in LAUNCHERS:
        raise ValueError(
            f"unknown launcher {launcher!r}; available: {', '.join(sorted(LAUNCHERS))}"
        )
    if not name or os.sep in name:
        raise ValueError(f"profile name must be a plain name like 'mpi'; got {name!r}")
    if encrypt is None:
        encrypt = ip not in LOOPBACK
    if launcher in REMOTE_ENGINES and ip in LOOPBACK:
        warnings.warn(
            f"the {launcher} profile's controller listens on {ip} only, so engines on other hosts "
            "cannot reach it; if the batch jobs run on compute nodes, create the profile again with "
            "--ip set to this host's address on the cluster network",
            stacklevel=2,
        )
    impl = implementations.get(mpi) if mpi else implementations.current()
    # the one recipe for starting ranks (no wall-clock limit inherited from whoever runs
    # ipcluster); not installed: refused before any file is written
    launch = world_launch(impl)
    mpi_cmd = list(launch.mpiexec)
    root = Path(ipython_dir_) if ipython_dir_ is not None else ipython_dir()
    profile = root / f"profile_{name}"
    profile.mkdir(parents=True, exist_ok=True)
    preload = mpiexec_args(impl)
    environment = launch.environment

    def shell(words) -> str:
        return " ".join(map(shlex.quote, words)).replace("{", "{{").replace("}", "}}")

    launcher_lines = "\n".join(LAUNCHERS[launcher]).format(
        engine_cmd=list(ENGINE_CMD), mpi_cmd=mpi_cmd, mpi_cmd_sh=shell(mpi_cmd), preload=preload, preload_sh=shell(preload),
        environment=environment, environment_sh=shell(f"{k}={v}" for k, v in environment.items()))
    (profile / "ipcluster_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n" + launcher_lines + "\n"
        "c.Cluster.delay = 0\n"
        "# the controller in one process, its schedulers as threads (mpiworkbench.client.cluster.controller)\n"
        f"c.LocalControllerLauncher.controller_cmd = {controller.COMMAND!r}\n"
        f"c.LocalControllerLauncher.controller_args = {controller.ARGS!r}\n"
    )
    (profile / "ipcontroller_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n"
        f"# loopback only unless you change it (engines on other hosts need an external interface)\n"
        f"c.IPController.ip = {ip!r}\n"
        + ("# beyond loopback: traffic encrypted (CurveZMQ); the connection files hold the key\n"
           "c.IPController.enable_curve = True\n" if encrypt else
           "# messages are signed with the connection files' key; encrypt with `mpiworkbench profile create --encrypt`\n")
        + f"c.HeartMonitor.period = {HEARTBEAT_MS}\n"
        f"c.HeartMonitor.max_heartmonitor_misses = {HEARTBEAT_MISSES}\n"
        "# the task database's bounds (records, bytes of results): ipyparallel's default keeps 1 GB\n"
        + "".join(f"c.DictDB.{name} = {value}\n" for name, value in hub_database_settings().items())
    )
    (profile / "ipengine_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n"
        "# engine id = MPI rank, and `MPI`, `mpi_rank`, `mpi_size` in every engine's namespace\n"
        "c.IPEngine.use_mpi = True\n"
        "# how long an engine waits for a silent controller (a stall) before it leaves: the\n"
        "# workbench's ENGINE_PATIENCE_S (mpiworkbench.client.cluster.start), in heartbeat checks\n"
        f"c.IPEngine.max_heartbeat_misses = {engine_heartbeat_misses()}\n"
    )
    return profile
