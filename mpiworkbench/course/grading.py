"""Autograding MPI notebooks that cannot hang the grader: nbgrader's ``autograde`` on one MPI
cluster, made fresh before each submission.

A course's ``nbgrader_config.py`` (written by :func:`mpiworkbench.course.build`) calls
:func:`configure`, which

* puts :class:`FreshWorld` before nbgrader's ``Execute`` in ``Autograde.autograde_preprocessors``:
  before each submission is executed it makes sure the profile's cluster runs (attaching to a
  running one; otherwise starting one with ``ipcluster``, stopped when grading ends) and gives
  it a fresh MPI world (``restart``), so that a deadlock left by the previous student costs the
  next one nothing. The notebooks' first cell (``Workbench(n=2, profile="mpi")``) attaches to it;
* sets ``$MPIWORKBENCH_TIMEOUT`` for the notebooks' kernels: an MPI call (``%%px`` cell,
  ``wb.run``, a solver step) that takes longer is reported as hung — which rank is blocked in
  which call on which line — in that cell's output, which nbgrader's feedback shows; the
  notebook's later MPI calls are then refused at once (``$MPIWORKBENCH_REFUSE_AFTER_HANG``),
  so the rest of that notebook fails fast;
* sets nbgrader's own per-cell limit (``Execute.timeout``) above it, for code that hangs
  outside MPI.

Grade on a cluster used for nothing else: its world is restarted before every submission. A
cluster started with ``ipcluster start`` tears itself down when its engines stop within 30 s of
starting (``IPClusterStart.early_shutdown``): start grading later than that, or start it with
``--IPClusterStart.early_shutdown=0`` (as the grader does when it starts one itself).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbconvert.preprocessors import Preprocessor
from traitlets import Float, Integer, Unicode

from mpiworkbench.client.cluster import attach
from mpiworkbench.client.cluster.profiles import create_profile
from mpiworkbench.client.calls.execution import REFUSE_AFTER_HANG_VARIABLE, TIMEOUT_VARIABLE
from mpiworkbench.client.calls.session import Session

__all__ = ["configure", "FreshWorld", "GradingWorld"]

#: Seconds the grader waits for a cluster it starts to be up, and for it to stop.
START_LIMIT_S = 180.0

log = logging.getLogger(__name__)


class GradingWorld:
    """The MPI cluster of *profile* that submissions are graded on, for one grading process.

    :meth:`fresh` is called before each submission: the first time it attaches to the
    profile's running cluster, or starts one (``ipcluster start -n RANKS --profile=PROFILE``,
    in a process of its own); then it restarts the MPI world (force: whatever runs on a
    grading cluster is ended), except for the first submission on a cluster it has just
    started. :meth:`close` detaches, and stops the cluster if it started it (at interpreter
    exit at the latest).
    """

    def __init__(self, profile: str, ranks: int, timeout: float):
        self.profile, self.ranks, self.timeout = profile, ranks, timeout
        self.session: Session | None = None
        self.ipcluster: subprocess.Popen | None = None
        self._log_dir: str | None = None
        self._graded = 0

    def fresh(self) -> Session:
        """A fresh MPI world for the next submission (the session the grader holds on it)."""
        if self.session is None:
            if attach.running_cluster(self.profile) is None:
                self._start_ipcluster()
            self.session = Session.attach(self.profile, timeout=self.timeout, activate=False)
            if self.session.n != self.ranks:
                log.warning("grading on the running %r cluster's %d rank(s) (the course asks for %d)",
                            self.profile, self.session.n, self.ranks)
        # a cluster found running may hold anything (an earlier grading's deadlock): only the
        # first submission on a cluster started just now has its world fresh already
        if self._graded or self.ipcluster is None:
            self.session.restart(force=True)
        self._graded += 1
        return self.session

    def _start_ipcluster(self) -> None:
        directory = attach.profile_dir(self.profile)
        if not (directory / "ipcluster_config.py").exists():
            create_profile(self.profile)
        self._log_dir = tempfile.mkdtemp(prefix="mpiworkbench-grading-")
        logfile = Path(self._log_dir) / "ipcluster.log"
        with open(logfile, "ab") as out:
            self.ipcluster = subprocess.Popen(
                [sys.executable, "-m", "ipyparallel.cluster", "start", "-n", str(self.ranks),
                 f"--profile={self.profile}",
                 # engines are restarted between submissions, maybe within ipcluster's first 30 s
                 "--IPClusterStart.early_shutdown=0"],
                cwd=self._log_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        atexit.register(self.close)
        cluster_file = directory / "security" / "cluster-.json"
        deadline = time.monotonic() + START_LIMIT_S
        while not attach.engines_recorded(cluster_file):
            if self.ipcluster.poll() is not None or time.monotonic() > deadline:
                why = "exited" if self.ipcluster.poll() is not None else f"was not up within {START_LIMIT_S:g} s"
                tail = logfile.read_text(errors="replace")[-3000:]
                self.close()
                raise RuntimeError(f"the grading cluster (ipcluster --profile={self.profile}) {why}:\n{tail}")
            time.sleep(0.2)

    def close(self) -> None:
        """Detach; stop the cluster if this grader started it (idempotent)."""
        session, self.session = self.session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.stop()
        server, self.ipcluster = self.ipcluster, None
        if server is not None:
            subprocess.run([sys.executable, "-m", "ipyparallel.cluster", "stop", f"--profile={self.profile}"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=START_LIMIT_S, check=False)
            try:
                server.wait(timeout=START_LIMIT_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None


_WORLDS: dict[tuple, GradingWorld] = {}


class FreshWorld(Preprocessor):
    """nbgrader preprocessor: before a submission is executed, a fresh MPI world of the
    course's cluster (:class:`GradingWorld`, one per grading process)."""

    profile = Unicode("mpi", help="The IPython profile whose cluster the notebooks attach to.").tag(config=True)
    ranks = Integer(2, help="MPI ranks of the cluster the grader starts when none runs.").tag(config=True)
    timeout = Float(60.0, help="Seconds an MPI call may take before it is reported as hung.").tag(config=True)

    def preprocess(self, nb, resources):
        """Make the world fresh; the notebook passes unchanged."""
        key = (self.profile, self.ranks, self.timeout)
        world = _WORLDS.get(key)
        if world is None:
            world = _WORLDS[key] = GradingWorld(self.profile, self.ranks, self.timeout)
        world.fresh()
        return nb, resources


def configure(c, profile: str = "mpi", ranks: int = 2, timeout: float = 60.0, cell_timeout: int = 600) -> None:
    """Set up nbgrader config *c* to grade MPI notebooks: a fresh world of *ranks* ranks of
    *profile* before each submission (:class:`FreshWorld`), *timeout* seconds for every MPI call
    (then the hang report) and *cell_timeout* seconds for every cell."""
    from nbgrader.converters.autograde import Autograde

    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [FreshWorld, *(p for p in defaults if p is not FreshWorld)]
    c.FreshWorld.profile, c.FreshWorld.ranks, c.FreshWorld.timeout = profile, ranks, float(timeout)
    c.Execute.timeout = int(cell_timeout)
    # nbgrader runs alembic (its gradebook's migrations) from PATH: find this environment's
    # even when it is not activated (`.venv/bin/nbgrader ...`)
    here = os.path.dirname(sys.executable)
    if here not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([here, *filter(None, [os.environ.get("PATH")])])
    # the notebooks' kernels inherit them: their sessions' limit on every MPI call, and after a
    # hang their later calls fail at once rather than each waiting its timeout behind it
    os.environ[TIMEOUT_VARIABLE] = repr(float(timeout))
    os.environ[REFUSE_AFTER_HANG_VARIABLE] = "1"
