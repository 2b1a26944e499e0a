"""`mpiworkbench profile create` then `ipcluster start --profile=mpi` gives MPI engines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import ipyparallel as ipp

from mpiworkbench.session.profile import create_profile


def _ipcluster(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("ipcluster")), *args]


def _engines_recorded(cluster_file: Path) -> bool:
    """Whether ipcluster has finished writing a cluster file that records its engines."""
    try:
        data = json.loads(cluster_file.read_text())
    except (OSError, ValueError):  # not there yet, or caught half-written
        return False
    return bool((data.get("engines") or {}).get("sets"))


@ipp.interactive  # resolve globals in the engine's namespace
def _engine_mpi_size():
    return mpi_size  # noqa: F821 - defined on engines started with --mpi


def test_ipcluster_starts_mpi_engines_from_the_profile(tmp_path):
    ipython_dir = tmp_path / "ipython"
    create_profile("mpi", ipython_dir_=ipython_dir)
    env = {**os.environ, "IPYTHONDIR": str(ipython_dir)}
    cluster_id = f"test-{uuid.uuid4().hex[:6]}"
    common = ["--profile=mpi", f"--cluster-id={cluster_id}"]
    server = subprocess.Popen(_ipcluster("start", "-n", "2", *common), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        profile_dir = str(ipython_dir / "profile_mpi")
        cluster_file = Path(profile_dir) / "security" / f"cluster-{cluster_id}.json"
        deadline = 120
        import time

        start = time.monotonic()
        while not _engines_recorded(cluster_file):  # the condition: ipcluster wrote its cluster file
            assert server.poll() is None, "ipcluster exited early"
            assert time.monotonic() - start < deadline, "ipcluster did not come up"
            time.sleep(0.1)
        cluster = ipp.Cluster.from_file(str(cluster_file))
        client = cluster.connect_client_sync()
        client.wait_for_engines(2, timeout=120)

        def world():
            from mpi4py import MPI

            return MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size

        by_engine = client[:].apply_sync(world)
        assert sorted(by_engine) == [(0, 2), (1, 2)]
        assert client[:].apply_sync(_engine_mpi_size) == [2, 2]
    finally:
        if client is not None:
            client.close()
        subprocess.run(_ipcluster("stop", *common), env=env, check=False, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
