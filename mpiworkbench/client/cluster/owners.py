"""Who owns a running cluster, and how to ask a JupyterLab server for a fresh MPI world.

A cluster started from JupyterLab's *IPython Parallel* sidebar belongs to the Jupyter
server process: its in-memory ``Cluster`` is what the sidebar's STOP stops. Engines a
notebook started itself (by running the cluster file's launchers from the kernel) are not
in that object, so STOP would leave them running. For such a cluster, a restart is asked
of the server instead — stop, then create and start the same profile and cluster id, the
three requests the sidebar itself sends — and the notebook attaches to the new cluster.

Clusters of ``ipcluster start`` have no such service; ``ipcluster stop`` stops what the
cluster file lists, so a notebook's restart records its engine set there instead (see
:meth:`mpiworkbench.client.calls.session.Session.restart`).
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

#: Seconds one request to the Jupyter server may take (starting a cluster waits for the
#: controller; the engines register afterwards and are waited for by the session).
REQUEST_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class JupyterServer:
    """A running Jupyter server: where to send requests, and its token."""

    url: str
    token: str
    pid: int

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one authenticated request to the server's REST API; the decoded JSON reply."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url.rstrip("/") + path, data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as reply:
            text = reply.read()
        return json.loads(text) if text else None


def _parent_pid(pid: int) -> int | None:
    import psutil

    try:
        return psutil.Process(pid).ppid()
    except (psutil.Error, ValueError):
        return None


def _controller_pid(cluster) -> int | None:
    state = getattr(getattr(cluster, "controller", None), "to_dict", lambda: {})()
    pid = state.get("pid") if isinstance(state, dict) else None
    return int(pid) if pid else None


def owning_server(cluster) -> JupyterServer | None:
    """The Jupyter server whose process started *cluster*'s controller, or ``None``
    (``ipcluster``, a script, a batch job — or a controller that is not a local process)."""
    pid = _controller_pid(cluster)
    owner = _parent_pid(pid) if pid else None
    if owner is None:
        return None
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:  # no Jupyter server installed: nobody of that kind can own it
        return None
    for info in list_running_servers():
        if int(info.get("pid", -1)) == owner and info.get("url"):
            return JupyterServer(info["url"], info.get("token", ""), owner)
    return None


def cluster_key(profile: str, cluster_id: str) -> str:
    """The sidebar's key of a cluster (``"mpi:"`` for profile mpi, cluster id ``""``)."""
    return f"{profile}:{cluster_id}"


def restart_through(server: JupyterServer, profile: str, cluster_id: str, n: int) -> None:
    """Have *server* stop its cluster of *profile*/*cluster_id* and start it again with *n*
    engines (controller included: the sidebar has no "restart the engines" request)."""
    path = "/ipyparallel/clusters"
    key = cluster_key(profile, cluster_id)
    quoted = urllib.parse.quote(key, safe="")
    server.request("DELETE", f"{path}/{quoted}")
    # listing reloads the profiles; it brings back a stopped cluster of the default id (what
    # the sidebar shows after STOP), which may already have happened if the sidebar polled
    listed = {model.get("id") for model in server.request("GET", path) or []}
    if key not in listed:
        server.request("POST", path, {"profile": profile, "cluster_id": cluster_id, "n": n})
    server.request("POST", f"{path}/{quoted}", {"n": n})
