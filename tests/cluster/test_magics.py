"""``%%px`` through a real IPython shell: output, rank order, and the timeout on a hang."""

from __future__ import annotations

import pytest

from mpiworkbench import ExecutionTimeout, Workbench
@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


def test_px_runs_on_every_rank_and_times_out_on_a_hang(shell, capsys):
    wb = Workbench(n=2, timeout=2.0, failure_grace=0.5)
    shell.user_ns["wb"] = wb
    try:
        wb.start()
        result = shell.run_cell("%%px --no-stream\nprint(f'hello from rank {mpi_rank} of {mpi_size}')")
        assert result.success, result.error_in_exec
        out = capsys.readouterr().out
        assert "hello from rank 0 of 2" in out and "hello from rank 1 of 2" in out

        shell.run_cell("%px x = mpi_rank * 10")
        assert wb.pull("x", rank=0) == 0
        assert wb.pull("x", rank=1) == 10

        hang = "%%px\nif mpi_rank == 0:\n    raise RuntimeError('rank 0 fails first')\nMPI.COMM_WORLD.Barrier()"
        result = shell.run_cell(hang)
        assert isinstance(result.error_in_exec, ExecutionTimeout)
        assert result.error_in_exec.failed == [0] and result.error_in_exec.running == [1]

        wb.restart()  # the way out; the magics now target the new engines
        result = shell.run_cell("%%px --no-stream\nprint('alive', mpi_rank)")
        assert result.success, result.error_in_exec
        assert "alive 1" in capsys.readouterr().out

        # the workbench's own calls leave ipyparallel's histories as they were; a user's %px stays
        histories = lambda: (len(wb.client.history), len(wb.view.history))  # noqa: E731
        before = histories()
        for _ in range(20):
            wb.run(abs, -1)
        assert histories() == before
        shell.run_cell("%px y = 1")
        assert histories() == (before[0] + 2, before[1] + 2)
    finally:
        wb.stop()
