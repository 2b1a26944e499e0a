"""The lab part: the MPI world sidebar in a JupyterLab of any environment.

Shipped in this package (the one-environment case) and, as it is, in a wheel of its own
(``mpiworkbench-lab``, :mod:`mpiworkbench.cli.labpart` builds it) for a lab without the workbench —
a centre's JupyterLab — as dask-labextension ships apart from dask. It imports nothing of the rest
of the package; the kernel side (:mod:`mpiworkbench.sidebar`) answers it through files and a reader
process, in a protocol both sides version (:mod:`.protocol`):

* the server extension (:mod:`.server`): ``GET /mpiworkbench/worlds``, every MPI world of this host,
  its ranks and where each one is, as each world's own reader reads it;
* the lab extension (TypeScript in ``extension/``, built by ``make lab`` / ``make test`` into
  ``labextension/``): the sidebar itself, the worlds' Interrupt, Restart and Stop, the ranks'
  consoles, and JupyterLab's Debugger pinned to a rank.
"""

#: The lab extension's name (its ``package.json``), the directory JupyterLab loads it from.
LABEXTENSION_NAME = "mpiworkbench-world-sidebar"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built lab extension is (``jupyter labextension develop`` reads this)."""
    return [{"src": "labextension", "dest": LABEXTENSION_NAME}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension's module (jupyter_server reads this)."""
    return [{"module": f"{__name__}.server"}]
