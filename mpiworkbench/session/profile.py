"""IPython cluster profiles, so ``ipcluster start -n 4 --profile=mpi`` starts MPI engines.

Launchers are plugged in by short name (ipyparallel's own names). Each entry says which
ipyparallel launcher starts the engines and any settings it needs; a Slurm, PBS or SSH
profile is one more entry here, not new machinery.
"""

from __future__ import annotations

import os
from pathlib import Path

from mpiworkbench.session.workbench import HEARTBEAT_MISSES, HEARTBEAT_MS

#: Launcher name → extra ``ipcluster_config.py`` lines for it.
LAUNCHERS: dict[str, list[str]] = {
    "mpi": [
        'c.Cluster.engine_launcher_class = "mpi"',
        "# the mpiexec beside this Python (the mpich wheel's), so launcher and library match",
        "c.MPILauncher.mpi_cmd = [{mpiexec!r}]",
    ],
}

_HEADER = "# Written by `mpiworkbench profile create`; edit freely, re-running overwrites it.\n"


def ipython_dir() -> Path:
    from IPython.paths import get_ipython_dir

    return Path(get_ipython_dir())


def create_profile(name: str = "mpi", launcher: str = "mpi", ip: str = "127.0.0.1", ipython_dir_: str | os.PathLike | None = None) -> Path:
    """Write ``profile_<name>`` (ipcluster, ipcontroller and ipengine configs); return its path."""
    if launcher not in LAUNCHERS:
        raise ValueError(
            f"unknown launcher {launcher!r}; available: {', '.join(sorted(LAUNCHERS))}"
        )
    if not name or os.sep in name:
        raise ValueError(f"profile name must be a plain name like 'mpi'; got {name!r}")
    from mpiworkbench.launch import find_mpiexec

    root = Path(ipython_dir_) if ipython_dir_ is not None else ipython_dir()
    profile = root / f"profile_{name}"
    profile.mkdir(parents=True, exist_ok=True)
    launcher_lines = "\n".join(LAUNCHERS[launcher]).format(mpiexec=find_mpiexec())
    (profile / "ipcluster_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n" + launcher_lines + "\n"
        "c.Cluster.delay = 0\n"
    )
    (profile / "ipcontroller_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n"
        f"# loopback only unless you change it (engines on other hosts need an external interface)\n"
        f"c.IPController.ip = {ip!r}\n"
        f"c.HeartMonitor.period = {HEARTBEAT_MS}\n"
        f"c.HeartMonitor.max_heartmonitor_misses = {HEARTBEAT_MISSES}\n"
    )
    (profile / "ipengine_config.py").write_text(
        _HEADER + "c = get_config()  # noqa: F821\n"
        "# engine id = MPI rank, and `MPI`, `mpi_rank`, `mpi_size` in every engine's namespace\n"
        "c.IPEngine.use_mpi = True\n"
    )
    return profile
