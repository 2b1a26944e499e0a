"""The lab part's server extension: ``GET /mpiworkbench/worlds``, what the world sidebar shows.

Enabled for every Jupyter server of the environment by a ``jupyter_server_config.d`` file, which
``make lab`` and ``make test`` copy into the venv and a wheel installs (``jupyter server extension
list`` shows it): this package's own (``mpiworkbench.lab``) when the lab runs in the workbench's
environment, or the lab part's wheel (``mpiworkbench_lab``) in a lab of its own, a centre's.

The lab never reads a world's files itself. Each world's record names the Python and module that
read it (:mod:`.protocol`): the kernel side's own environment, which may be another one than the
lab's. One reader process per such environment is started on the first look and kept
(:class:`Readers`); each look of the sidebar asks each reader, in a line of JSON, for the worlds it
owns. While it serves, the server leaves its marker in Jupyter's runtime directory, so that a
kernel knows the sidebar is there (:func:`.protocol.live_labs`).

Standard library, jupyter_server and tornado only, and relative imports: this module ships in the
lab part's wheel as it is.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import select
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from . import protocol

#: The endpoint, below the server's base URL.
WORLDS_PATH = "mpiworkbench/worlds"
#: Seconds a reader may take to answer one look (its first one imports the kernel side's code).
READ_TIMEOUT_S = 60.0


def external_kernel_files(kernel_manager) -> dict[str, str]:
    """Kernel id → connection file of the lab's external kernels (``allow_external_kernels``):
    jupyter_client's ``MultiKernelManager`` gives each file it finds in its external connection
    directory a new kernel id when it lists its kernels, and keeps the pair in
    ``kernel_id_to_connection_file``; listing first takes up files that appeared since."""
    if getattr(kernel_manager, "external_connection_dir", None) is None:
        return {}
    kernel_manager.list_kernel_ids()
    return {kernel_id: str(path) for kernel_id, path in dict(kernel_manager.kernel_id_to_connection_file).items()}


def ipython_dir() -> str:
    """Where every profile, and so every world, is: IPython's own answer when the lab's
    environment has IPython, else the same rule (``$IPYTHONDIR``, else ``~/.ipython``)."""
    try:
        from IPython.paths import get_ipython_dir  # optional: a lab part without IPython uses the rule
    except ImportError:
        return os.environ.get("IPYTHONDIR") or str(Path.home() / ".ipython")
    return get_ipython_dir()


class Reader:
    """One reader process (``python -m module`` of a world's record) and its pipes."""

    def __init__(self, python: str, module: str) -> None:
        self.command = [python, "-m", module]
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        self.lock = threading.Lock()

    def ask(self, request: dict[str, Any], timeout: float = READ_TIMEOUT_S) -> dict[str, Any]:
        """Send *request*, return its answer; ``OSError`` when the reader is gone or silent."""
        with self.lock:
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
            line = self.process.stdout.readline() if ready else ""
        if not line:
            raise OSError(f"{' '.join(self.command)} did not answer within {timeout:.0f} s"
                          + (f" (it exited with {self.process.poll()})" if self.process.poll() is not None else ""))
        return json.loads(line)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class Readers:
    """The reader processes of this server, one per kernel-side environment, started on demand."""

    def __init__(self) -> None:
        self._readers: dict[tuple[str, str], Reader] = {}
        self._lock = threading.Lock()
        atexit.register(self.close)

    def ask(self, python: str, module: str, request: dict[str, Any]) -> dict[str, Any]:
        """*request* answered by the reader ``python -m module``; a reader that failed is ended
        (the next look starts it again: an environment upgraded meanwhile is then read by its
        new code)."""
        key = (python, module)
        with self._lock:
            reader = self._readers.get(key)
            if reader is None or reader.process.poll() is not None:
                reader = self._readers[key] = Reader(python, module)
        try:
            return reader.ask(request)
        except (OSError, ValueError):
            with self._lock:
                if self._readers.get(key) is reader:
                    del self._readers[key]
            reader.close()
            raise

    def close(self) -> None:
        with self._lock:
            readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            reader.close()


def unread_world(profile_dir: Path, cluster_id: str, why: str, state: str = "unknown") -> dict[str, Any]:
    """A world the lab cannot read (or not yet: *state* ``starting``), as the sidebar shows it:
    its name and why."""
    return {"cluster_id": cluster_id, "profile": profile_dir.name[len("profile_"):], "profile_dir": str(profile_dir),
            "state": state, "note": why, "generation": None, "notebooks": [], "clients": [], "busy": None,
            "holder_kernel": "", "holder_notebook": None, "holder_in_lab": False, "ranks": [], "groups": []}


def read_worlds(readers: Readers, kernel_files: dict[str, str], lab_kernels: list[str]) -> list[dict[str, Any]]:
    """Every world of this host: each asked of its own reader, in the order of the directories."""
    owned: dict[tuple[str, str], list[tuple[Path, str, Path]]] = {}
    shown: dict[Path, dict[str, Any]] = {}
    for profile_dir, cluster_id, directory in (found := protocol.world_directories(ipython_dir())):
        reader = protocol.read_reader(directory)
        why = protocol.mismatch(reader)
        if not (directory / protocol.WORLD_RECORD).exists():  # its first client has not recorded it yet
            shown[directory] = unread_world(profile_dir, cluster_id, "", state="starting")
        elif why:
            shown[directory] = unread_world(profile_dir, cluster_id, why)
        else:
            owned.setdefault((reader["python"], reader["module"]), []).append((profile_dir, cluster_id, directory))
    for (python, module), worlds in owned.items():
        request = {"protocol": protocol.PROTOCOL, "worlds": [[str(p), c, str(d)] for p, c, d in worlds],
                   "kernel_files": kernel_files, "lab_kernels": lab_kernels}
        try:
            answer = readers.ask(python, module, request)
            error = answer.get("error")
        except (OSError, ValueError) as exc:
            answer, error = {}, str(exc)
        read = answer.get("worlds") or []
        for (profile_dir, cluster_id, directory), world in zip(worlds, read if not error else [None] * len(worlds)):
            shown[directory] = world or unread_world(profile_dir, cluster_id, f"its reader failed: {error}")
    return [shown[directory] for _, _, directory in found if directory in shown]


class WorldsHandler(APIHandler):
    """Every MPI world of this host, its ranks and where each is (JSON: a ``worlds`` list)."""

    @web.authenticated
    async def get(self) -> None:
        files = external_kernel_files(self.kernel_manager)  # (lists the kernels first: takes in new files)
        lab_kernels = list(self.kernel_manager.list_kernel_ids())
        readers = self.settings["mpiworkbench_readers"]
        worlds = await asyncio.get_running_loop().run_in_executor(None, read_worlds, readers, files, lab_kernels)
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps({"worlds": worlds, "protocol": protocol.PROTOCOL}))


def list_rank_kernels(server_app) -> str | None:
    """Have the lab list the ranks' kernels (their connection files, :mod:`.protocol`'s kernel
    side writes them into ``<runtime dir>/external_kernels``): jupyter_server's external kernels,
    turned on here when the server was started without ``--ServerApp.allow_external_kernels``
    (a setting a ``jupyter_server_config.d`` file cannot give: those set extensions only). The
    kernel manager reads its directory at each listing. Returns the directory, ``None`` where
    jupyter_client is too old for external kernels (before 8.3)."""
    manager = server_app.kernel_manager
    if not manager.has_trait("external_connection_dir"):
        server_app.log.warning("mpiworkbench: jupyter_client is too old to list the ranks' kernels (8.3 or later needed)")
        return None
    if manager.external_connection_dir is None:
        manager.external_connection_dir = str(Path(server_app.runtime_dir) / "external_kernels")
        server_app.log.info("mpiworkbench: the ranks' kernels listed from %s", manager.external_connection_dir)
    return manager.external_connection_dir


def load_jupyter_server_extension(server_app) -> None:
    """Add the handlers to *server_app* (jupyter_server's entry point, by this name), once: the
    workbench's environment may enable both the package's lab part and the lab part's wheel."""
    web_app = server_app.web_app
    if "mpiworkbench_readers" in web_app.settings:
        server_app.log.info("mpiworkbench: the MPI world sidebar's endpoint is served already (%s)", __name__)
        return
    web_app.settings["mpiworkbench_readers"] = Readers()
    route = url_path_join(web_app.settings["base_url"], WORLDS_PATH)
    web_app.add_handlers(".*$", [(route, WorldsHandler)])
    listed = list_rank_kernels(server_app)
    marker = protocol.write_marker(server_app.runtime_dir, {
        "host": socket.gethostname(), "started": time.time(), "module": __name__,
        "external_kernels": bool(listed), "external_connection_dir": listed or ""})
    atexit.register(lambda: marker.unlink(missing_ok=True))
    server_app.log.info("mpiworkbench: the MPI world sidebar's endpoint at %s", route)


_load_jupyter_server_extension = load_jupyter_server_extension
