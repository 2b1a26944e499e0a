"""The lab's server extension: ``GET /mpiworkbench/worlds``, what the world sidebar shows.

Enabled for every Jupyter server of the environment (``mpiworkbench lab``'s among them) by
``etc/jupyter/jupyter_server_config.d/mpiworkbench.json``, which ``make lab`` and ``make test`` copy
into the venv and a wheel installs (``jupyter server extension list`` shows it). The
answer is read from files alone (:mod:`mpiworkbench.lab.worlds`): a notebook's kernel is busy
while its cell runs, so none is asked.
"""

from __future__ import annotations

import json

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

#: The endpoint, below the server's base URL.
WORLDS_PATH = "mpiworkbench/worlds"


def external_kernel_files(kernel_manager) -> dict[str, str]:
    """Kernel id → connection file of the lab's external kernels (``allow_external_kernels``):
    jupyter_client's ``MultiKernelManager`` gives each file it finds in its external connection
    directory a new kernel id when it lists its kernels, and keeps the pair in
    ``kernel_id_to_connection_file``; listing first takes up files that appeared since."""
    if getattr(kernel_manager, "external_connection_dir", None) is None:
        return {}
    kernel_manager.list_kernel_ids()
    return {kernel_id: str(path) for kernel_id, path in dict(kernel_manager.kernel_id_to_connection_file).items()}


class WorldsHandler(APIHandler):
    """Every MPI world of this host, its ranks and where each is (JSON: a ``worlds`` list)."""

    @web.authenticated
    def get(self) -> None:
        from IPython.paths import get_ipython_dir  # where every profile, and so every world, is

        from mpiworkbench.lab.worlds import read_worlds  # import cost (~0.5 s): when the sidebar first asks, not at the lab's start

        files = external_kernel_files(self.kernel_manager)  # (lists the kernels first: takes in new files)
        worlds = read_worlds(get_ipython_dir(), files, lab_kernels=set(self.kernel_manager.list_kernel_ids()))
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps({"worlds": worlds}))


def load_jupyter_server_extension(server_app) -> None:
    """Add the handlers to *server_app* (jupyter_server's entry point, by this name)."""
    web_app = server_app.web_app
    route = url_path_join(web_app.settings["base_url"], WORLDS_PATH)
    web_app.add_handlers(".*$", [(route, WorldsHandler)])
    server_app.log.info("mpiworkbench: the MPI world sidebar's endpoint at %s", route)


_load_jupyter_server_extension = load_jupyter_server_extension

