"""A CLI command that fails in an MPI world says why before the world ends.

A rank that exits with an error ends the world (``python -m mpi4py`` calls ``MPI_Abort``). The
message is rank 0's: the other ranks must not end the world before rank 0 has written it (CI
saw only ``Abort(2) on node 1`` once, under Intel MPI). An error on one rank alone (the others
are elsewhere) is said by that rank, naming it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from mpiworkbench.core import implementations, launch

INSTALLED = [impl.name for impl in implementations.REGISTRY if impl.installed()]
JOB_TIMEOUT_S = 120

#: Every rank fails at once with the same error, as bad input does; the last rank at once,
#: rank 0 after a moment's work, which is when the world used to end before it wrote.
EVERY_RANK = """
import sys, time
from mpiworkbench.cli import report_error
from mpiworkbench.core import mpi
comm = mpi.world()
if comm.rank == 0:
    time.sleep(0.5)  # rank 0 is the last to fail: the others must wait for its message
report_error("demo", ValueError("--size 0 must be at least 1"))
sys.exit(2)
"""

#: Only the last rank fails; the others wait in a collective it never joins.
ONE_RANK = """
import sys
from mpiworkbench.cli import report_error
from mpiworkbench.core import mpi
comm = mpi.world()
if comm.rank == comm.size - 1:
    report_error("demo", ValueError("no file /nowhere on this host"))
    sys.exit(2)
comm.Barrier()
"""


def _run(impl: str, np: int, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mpiworkbench.core.launch", "--mpi", impl, "-n", str(np), "--timeout",
         str(JOB_TIMEOUT_S), "--", sys.executable, "-m", "mpi4py", "-c", script],
        capture_output=True, text=True, timeout=JOB_TIMEOUT_S + launch.LIMIT_GRACE_S + 30)


@pytest.mark.parametrize("np", [1, 2, 3])
@pytest.mark.parametrize("impl", INSTALLED)
def test_an_error_on_every_rank_is_said_once_before_the_world_ends(impl, np):
    proc = _run(impl, np, EVERY_RANK)
    assert proc.returncode != 0
    assert proc.stderr.count("mpiworkbench demo: error: --size 0 must be at least 1") == 1, proc.stderr
    assert "error on rank" not in proc.stderr


#: Each case waits :data:`~mpiworkbench.cli.ERROR_MEET_S` for ranks that never come: every
#: implementation at 2 ranks, MPICH at 3 too.
ONE_RANK_CASES = [(impl, 2) for impl in INSTALLED] + [(impl, 3) for impl in INSTALLED[:1]]


@pytest.mark.parametrize(("impl", "np"), ONE_RANK_CASES)
def test_an_error_on_one_rank_is_said_by_that_rank(impl, np):
    proc = _run(impl, np, ONE_RANK)
    assert proc.returncode != 0
    assert f"mpiworkbench demo: error on rank {np - 1}: no file /nowhere on this host" in proc.stderr, proc.stderr
