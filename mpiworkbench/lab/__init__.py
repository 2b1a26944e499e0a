"""mpiworkbench in JupyterLab: the MPI world sidebar.

Two halves, shipped in the package as ipyparallel ships its own lab extension:

* the server extension (:mod:`mpiworkbench.lab.server`): ``GET /mpiworkbench/worlds``, every MPI
  world of this host, its ranks and where each one is, read from files alone
  (:mod:`mpiworkbench.lab.worlds`);
* the lab extension (TypeScript in ``extension/``, built by ``make lab`` / ``make test`` into
  ``labextension/``): the sidebar itself, the worlds' Interrupt, Restart and Stop, the ranks'
  consoles, and JupyterLab's Debugger pinned to a rank;
* what the sidebar's Restart and Stop call inside a notebook's kernel (:mod:`mpiworkbench.lab.actions`).
"""

#: The lab extension's name (its ``package.json``), the directory JupyterLab loads it from.
LABEXTENSION_NAME = "mpiworkbench-world-sidebar"


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the built lab extension is (``jupyter labextension develop`` reads this)."""
    return [{"src": "labextension", "dest": LABEXTENSION_NAME}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """The server extension's module (jupyter_server reads this)."""
    return [{"module": "mpiworkbench.lab.server"}]
