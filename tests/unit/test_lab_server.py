"""``GET /mpiworkbench/worlds`` in a real lab, started as ``mpiworkbench lab`` starts it (its command
line, the venv's server config enabling ``mpiworkbench.lab``): a fake world in a private IPython
directory, rank 1's connection file in the lab's external kernels, the kernel id the lab made up
for it reported on rank 1. Without the token the lab refuses (403)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mpiworkbench.cli.lab import lab_command, lab_settings
from mpiworkbench.client.cluster.record import world_directory, write_json_atomic
from mpiworkbench.lab.server import WORLDS_PATH
from tests.browser.lab_process import stop_lab
from tests.ports import free_port

pytestmark = pytest.mark.cost(20)

LIMIT_S = 120.0


def _get(url: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except OSError:  # not listening yet
        return 0, None


@pytest.fixture
def lab(tmp_path):
    """A lab on loopback, its runtime and IPython directories in *tmp_path*; stopped by its pid."""
    ipython_dir, runtime = tmp_path / "ipython", tmp_path / "runtime"
    root = tmp_path / "root"
    root.mkdir()
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir), "JUPYTER_RUNTIME_DIR": str(runtime),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "user-settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    command = lab_command(root, "127.0.0.1", port, no_browser=True, settings_dir=lab_settings(tmp_path / "app"))
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen([*command, f"--IdentityProvider.token={token}", "--LabApp.news_url=",
                                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
                               env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LIMIT_S
        while _get(f"{base}/api/status?token={token}")[0] != 200:
            assert process.poll() is None, f"the lab exited: {(tmp_path / 'lab.log').read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the lab did not answer within {LIMIT_S} s"
            time.sleep(0.2)  # polling a condition (the port answering)
        yield base, token, ipython_dir, runtime, process
    finally:
        stop_lab(process)
        log.close()


def _readers_of(pid: int) -> list[int]:
    """The reader processes the lab of *pid* started (``python -m mpiworkbench.sidebar.reader``)."""
    from mpiworkbench.core.processes import cmdline, descendants

    return [child for child in descendants(pid) if "mpiworkbench.sidebar.reader" in cmdline(child)]


def test_the_worlds_endpoint_reports_each_rank_and_its_lab_kernel_and_needs_the_token(lab):
    from mpiworkbench import __version__
    from mpiworkbench.core.processes import alive
    from mpiworkbench.lab import protocol

    base, token, ipython_dir, runtime, process = lab
    directory = world_directory(ipython_dir / "profile_default", "1700-ab")
    directory.mkdir(parents=True)
    write_json_atomic(directory / "world.json", {"ranks": {"0": 0, "1": 1}, "generation": 1,
                                                 "reader": protocol.reader_record(__version__)})
    # a world of an older kernel side (no reader record), and one of a newer (a later protocol)
    older = world_directory(ipython_dir / "profile_default", "1700-old")
    older.mkdir(parents=True)
    write_json_atomic(older / "world.json", {"ranks": {"0": 0}, "generation": 1})
    newer = world_directory(ipython_dir / "profile_default", "1700-zz")
    newer.mkdir(parents=True)
    write_json_atomic(newer / "world.json", {"ranks": {"0": 0}, "generation": 1, "reader": {
        **protocol.reader_record("9.9"), "protocol": protocol.PROTOCOL + 1}})
    # a world whose first client has not recorded it yet: starting, nothing to upgrade
    (ipython_dir / "profile_default" / "security" / "mpiworkbench-world-1700-new").mkdir()
    external = runtime / "external_kernels"
    external.mkdir(parents=True, exist_ok=True)
    (external / "mpiworkbench-1700-ab-g1-rank1.json").write_text(json.dumps({
        "kernel_name": "python3", "key": secrets.token_hex(8), "signature_scheme": "hmac-sha256",
        "transport": "tcp", "ip": "127.0.0.1", "shell_port": 1, "iopub_port": 2, "stdin_port": 3,
        "control_port": 4, "hb_port": 5}))

    status, answer = _get(f"{base}/{WORLDS_PATH}?token={token}")
    assert status == 200, status
    world, starting, old, new = answer["worlds"]
    assert (starting["cluster_id"], starting["state"], starting["note"]) == ("1700-new", "starting", "")
    assert (world["cluster_id"], world["profile"], world["state"]) == ("1700-ab", "default", "idle")
    kernels = {k["id"] for k in _get(f"{base}/api/kernels?token={token}")[1]}
    by_rank = {r["rank"]: r for r in world["ranks"]}
    assert by_rank[0]["kernel"] is None
    assert by_rank[1]["kernel"] in kernels, (by_rank[1], kernels)
    assert [g["ranks"] for g in world["groups"]] == [[0, 1]]
    # each told apart, with the side to upgrade named
    assert old["cluster_id"] == "1700-old" and "upgrade mpiworkbench in the kernel's environment" in old["note"]
    assert new["cluster_id"] == "1700-zz" and "newer than this sidebar" in new["note"] and "lab-part install" in new["note"]
    # the world was read by a reader of its own environment, kept for the next look
    readers = _readers_of(process.pid)
    assert len(readers) == 1, readers
    assert _get(f"{base}/{WORLDS_PATH}?token={token}")[0] == 200 and _readers_of(process.pid) == readers
    # the lab says it is there, for the kernels to know (and lists external kernels)
    (marker,) = protocol.live_labs(runtime)
    assert marker["pid"] == process.pid and marker["external_kernels"] is True and marker["protocol"] == protocol.PROTOCOL

    assert _get(f"{base}/{WORLDS_PATH}")[0] == 403
    stop_lab(process)
    assert not any(alive(pid) for pid in readers), "a reader outlived its lab"
    assert protocol.live_labs(runtime) == []
