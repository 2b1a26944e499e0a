"""Finding a running cluster and attaching to it: the profiles of an IPython directory, a cluster
file read back (restored so that a restart from here starts engines as the workbench that started
it did), and the cluster file written only where an attached session acts."""

from __future__ import annotations

import contextlib
import weakref
from pathlib import Path
from typing import Any, Iterator

from mpiworkbench.client.cluster.record import recorded_engine_set, world_directory
from mpiworkbench.client.cluster.engines import engine_count, launcher_name, quiet
from mpiworkbench.client.cluster.health import controller_alive
from mpiworkbench.client.cluster.start import engine_config


def ipython_dir() -> Path:
    """The IPython directory (``$IPYTHONDIR`` or ``~/.ipython``), where profiles live."""
    from IPython.paths import get_ipython_dir

    return Path(get_ipython_dir())


def profile_dir(profile: str, ipython_dir_: str | None = None) -> Path:
    """The directory of IPython profile *profile* (it may not exist)."""
    return Path(ipython_dir_ or ipython_dir()) / f"profile_{profile}"


def profiles(ipython_dir_: str | None = None) -> list[str]:
    """The IPython profiles that have a cluster configuration (``ipcluster_config.py``)."""
    root = Path(ipython_dir_ or ipython_dir())
    return sorted(p.name[len("profile_"):] for p in root.glob("profile_*") if (p / "ipcluster_config.py").exists())


def engines_recorded(cluster_file: str | Path) -> bool:
    """Whether *cluster_file* (ipyparallel's, e.g. ``ipcluster``'s ``cluster-.json``) is written
    and records engines: the cluster is up."""
    import json

    try:
        data = json.loads(Path(cluster_file).read_text())
    except (OSError, ValueError):  # not there yet, or caught half-written
        return False
    return bool((data.get("engines") or {}).get("sets"))


def running_cluster(profile: str = "default", cluster_id: str = "", ipython_dir_: str | None = None,
                    required: bool = False):
    """The running :class:`ipyparallel.Cluster` of *profile* and *cluster_id*, or ``None``.

    ``cluster_id=""`` is what ``ipcluster start`` and the sidebar use by default. With
    *required*, raise ``RuntimeError`` saying how to start one instead of returning ``None``.
    """
    found = _running_cluster(profile, cluster_id, ipython_dir_)
    if found is None and required:
        raise RuntimeError(
            f"no cluster of profile {profile!r} (cluster id {cluster_id!r}) is running; start one "
            f"with `ipcluster start -n 2 --profile={profile}` or JupyterLab's IPython Parallel sidebar "
            f"(profile {profile}, START), or let the workbench start its own: Workbench(n=2).start()"
        )
    return found


def _running_cluster(profile: str, cluster_id: str, ipython_dir_: str | None):
    import ipyparallel as ipp

    directory = profile_dir(profile, ipython_dir_)
    cluster_file = directory / "security" / f"cluster-{cluster_id}.json"
    if not cluster_file.exists():
        return None
    try:
        # from_file alone does not read the profile's ipcluster_config.py, which restarting
        # the engines needs (the mpiexec to use, a Slurm batch template): load it first
        profile_config = ipp.Cluster(profile_dir=str(directory), cluster_id=cluster_id,
                                     shutdown_atexit=False).profile_config
        cluster = ipp.Cluster.from_file(str(cluster_file), config=restoring(profile_config, directory),
                                        profile_dir=str(directory), cluster_id=cluster_id)
        restored(cluster)
    except (OSError, ValueError, KeyError):
        return None  # half-written or foreign file: not a cluster we can attach to
    if cluster.controller is None or not controller_alive(cluster):
        return None
    quiet(cluster)
    if launcher_name(cluster) == "mpi" and "mpi_cmd" not in profile_config.get("MPILauncher", {}):
        # a workbench's own cluster (its profile says nothing of how to start engines): a
        # restart from here starts them as the workbench that started it did, not with
        # ipyparallel's defaults (a bare mpiexec from PATH, no interposer)
        record = recorded_engine_set(world_directory(directory, cluster_id)) or {}
        cluster.update_config(engine_config(engine_count(cluster) or 1, record.get("thread_level"),
                                            mpi=record.get("mpi")))
    # Attached, we only watch: without this, noticing the owner's engines stop (a restart
    # from another notebook) would rewrite the owner's file from our stale view and drop the
    # engines recorded there. Writes are allowed only where we act (see `acting_on`), to the
    # file we read it from.
    _attached_files[cluster], cluster.cluster_file = str(cluster_file), ""
    return cluster


#: The cluster file an attached session read its cluster from (where :func:`acting_on` writes).
_attached_files: "weakref.WeakKeyDictionary[Any, str]" = weakref.WeakKeyDictionary()


def restoring(config, directory: Path):
    """*config* (a profile's) for restoring a cluster from its file. ipyparallel's batch
    launchers (Slurm's), restored, work out their default output file before they know their
    profile, and so create ``log/`` in the current directory (the notebook's); with an output
    file named they do not, and each takes its own from the cluster file right after."""
    import copy

    config = copy.deepcopy(config)
    config.BatchSystemLauncher.output_file = str(Path(directory, "log", "restored-engines.log"))
    return config


def restored(cluster) -> None:
    """Undo :func:`restoring` on the restored *cluster*: engine sets it starts later (a
    restart) name their own output files."""
    cluster.config.BatchSystemLauncher.pop("output_file", None)


@contextlib.contextmanager
def acting_on(cluster, attached: bool) -> Iterator[None]:
    """While an attached session changes *cluster* (restarts its engines, stops it), let its
    cluster object record the change in the cluster file, which the owner's ``ipcluster
    stop`` reads. A cluster the session started records its changes anyway."""
    if not attached:
        yield
        return
    cluster.cluster_file = _attached_files[cluster]
    try:
        yield
    finally:
        cluster.cluster_file = ""
