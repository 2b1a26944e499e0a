"""``ipcluster start --profile=NAME`` in a process the test owns, stopped with ``ipcluster stop``:
the cluster a user starts from a terminal, which notebooks and sessions then attach to."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import ipyparallel as ipp

from mpiworkbench.client.cluster import engines
from mpiworkbench.client.cluster.attach import engines_recorded
from mpiworkbench.core import shm
from tests.cluster.slurm import processes_with_env, wait_until

LIMIT = 120  # seconds; generous bounds on polled conditions
#: Wall-clock limit of the engines' Slurm job (minutes) and of every mpiexec (seconds).
JOB_MINUTES = "10"
MPIEXEC_TIMEOUT = os.environ.get("MPIEXEC_TIMEOUT", "600")


def _bin(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


class IPCluster:
    """``ipcluster start`` in a Popen we own (run in *cwd*), stopped with ``ipcluster stop``."""

    def __init__(self, profile: str, ipython_dir: Path, cwd: Path, env: dict[str, str]):
        self.profile, self.cwd = profile, cwd
        self.env = {**env, "IPYTHONDIR": str(ipython_dir), "MPIEXEC_TIMEOUT": MPIEXEC_TIMEOUT}
        self.profile_dir = ipython_dir / f"profile_{profile}"
        self.cluster_file = self.profile_dir / "security" / "cluster-.json"
        self.log = cwd / "ipcluster.log"
        self.server: subprocess.Popen | None = None

    def _diagnose(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def start(self, n: int) -> ipp.Client:
        with open(self.log, "ab") as log:
            self.server = subprocess.Popen(
                [_bin("ipcluster"), "start", "-n", str(n), f"--profile={self.profile}", "--log-level=DEBUG"],
                env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)

        def recorded():
            assert self.server.poll() is None, f"ipcluster exited early\n{self._diagnose()}"
            return engines_recorded(self.cluster_file)

        wait_until(recorded, "ipcluster to write its cluster file", LIMIT, diagnose=self._diagnose)
        # a client only: a Cluster object here would watch the engines and rewrite the
        # cluster file when they stop (as a notebook's restart makes them do)
        client = ipp.Client(str(self.profile_dir / "security" / "ipcontroller-client.json"))
        try:
            engines.wait_registered(client, n, LIMIT)
        except BaseException:
            client.close()
            raise
        return client

    def stop(self) -> None:
        if self.server is None:
            return
        mine = f"IPYTHONDIR={self.env['IPYTHONDIR']}"
        # `ipcluster stop` signals mpiexec, which does not always let every rank finalise (seen
        # at 3 ranks on 2 cores): what the ranks leave in /dev/shm is not the workbench's doing
        # and not what these tests check, so it is removed here once they have exited
        footprints = [record for record in map(shm.footprint, processes_with_env(mine)) if record["files"]]
        subprocess.run([_bin("ipcluster"), "stop", f"--profile={self.profile}"], env=self.env,
                       cwd=self.cwd, check=False, timeout=LIMIT,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.server.wait(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()
        # ipcluster stop returns once it has signalled; engines (and their nannies) exit a little
        # later, and ranks blocked inside MPI only when mpiexec's cleanup reaches them: wait for
        # every process of this cluster (its IPython directory is in their environment) to end
        try:
            wait_until(lambda: not processes_with_env(mine), "the cluster's processes to exit", LIMIT)
        except AssertionError:
            left = processes_with_env(mine)
            for pid in left:  # ours (started under this test's IPython directory): end them
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"ipcluster stop left processes running: {left}") from None
        finally:
            shm.remove_left_behind(footprints, also=shm.own_files)
