"""Real ipyparallel MPI clusters, always stopped in finalizers."""

from __future__ import annotations

import warnings

import pytest

from mpiworkbench import Workbench


@pytest.fixture(scope="session")
def _shared_wb():
    bench = Workbench(n=2, timeout=120)
    bench.start()
    yield bench
    bench.stop()


@pytest.fixture
def wb(_shared_wb, request):
    """A started 2-engine workbench shared by the tier (tests must leave it usable).

    Seen in three of four full runs of this tier on a new machine, never when the files ran
    alone or when every test probed it: the shared world found dead (both engines unregistered)
    by the first test of test_workbench.py after it had idled through other files' tests. Each test that takes it therefore gets it
    alive: a dead world is restarted, with a warning naming the test (what killed it is not
    known yet; the warning says when it happens)."""
    if _shared_wb.cluster is not None and _shared_wb._world_died():
        lost = _shared_wb._lost_ranks()
        lost = f"{lost}; {_how_it_ended(_shared_wb)}"
        _shared_wb.restart()
        with warnings.catch_warnings():  # said in the warnings summary, not turned into an error
            warnings.simplefilter("always")
            warnings.warn(f"the shared workbench's MPI world was found dead before {request.node.nodeid} "
                          f"({lost}); restarted it", stacklevel=1)
    return _shared_wb


def _how_it_ended(bench) -> str:
    """What the dead world's launchers know: mpiexec's exit code and the end of its output
    (the ranks' last words: an MPI_Abort, a signal, a Python traceback)."""
    said = []
    for launcher in (getattr(bench.cluster, "engines", None) or {}).values():
        data = getattr(launcher, "stop_data", None) or {}
        try:
            output = launcher.get_output() or ""
        except Exception as exc:  # noqa: BLE001 - a diagnostic must not fail the test
            output = f"(output not readable: {exc})"
        tail = " | ".join(line for line in output.strip().splitlines()[-12:])
        said.append(f"engines launcher exit data {data or 'none (still running?)'}; last output: {tail or '(none)'}")
    return "; ".join(said) or "no engine launcher to ask"


@pytest.fixture
def fresh_wb(request):
    """A workbench of its own, for tests that break or restart the MPI world.

    Parametrize indirectly with the rank count (default 2)."""
    n = getattr(request, "param", 2)
    bench = Workbench(n=n, timeout=60, oversubscribe=True, failure_grace=1.0)
    request.addfinalizer(bench.stop)
    bench.start()
    return bench
