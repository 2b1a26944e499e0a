"""What a centre deploys beside the package, shipped inside it so that the copy a centre installs
matches the workbench its users run.

``ondemand/``: an Open OnDemand interactive app ("batch connect", the ``basic`` template) that
starts JupyterLab inside a Slurm job of the nodes and MPI ranks a user asks for; a notebook's
``Workbench()`` then takes that job's allocation (:mod:`mpiworkbench.client.cluster.allocation`).
Its ``README.md`` says what to copy and the one file to edit.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ondemand_app_dir"]


def ondemand_app_dir() -> Path:
    """The Open OnDemand app's folder in this installation: copy this folder into your OOD apps
    directory (e.g. ``/var/www/ood/apps/sys/mpiworkbench``), then edit its ``form.yml``.

    Examples
    --------
    >>> (ondemand_app_dir() / "form.yml").is_file()
    True
    """
    return Path(__file__).with_name("ondemand")
