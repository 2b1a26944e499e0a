"""``wb.post_mortem(rank)``: the frame of a rank's last failure at the raise, with its variables,
read on the rank after a ``%%px`` cell or ``wb.run`` raised on some ranks only."""

from __future__ import annotations

import pytest

from mpiworkbench import RankFailure

CELL = """%%px --no-stream
scale = 10.0
values = [scale * r for r in range(mpi_rank + 1)]
share = scale / (mpi_rank - {failing})
"""


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    yield sh
    InteractiveShell.clear_instance()


def _index_past(values: list, n: int):
    data = list(values)
    return data[n]


@pytest.mark.parametrize("fresh_wb", [1, 2, 3], indirect=True, ids=["1rank", "2ranks", "3ranks"])
def test_the_failing_rank_shows_its_frame_at_the_raise_and_the_others_nothing(shell, fresh_wb):
    wb, failing = fresh_wb, fresh_wb.n - 1  # the shell first: the workbench's start registers %%px on it
    result = shell.run_cell(CELL.format(failing=failing))
    assert result.error_in_exec is not None  # the cell raised on the failing rank

    found = wb.post_mortem(failing)
    assert found.failed and found.exception == "ZeroDivisionError"
    assert found.frames[-1]["source"] == f"share = scale / (mpi_rank - {failing})"
    assert found.locals == {"scale": "10.0", "mpi_rank": str(failing)}
    assert "ZeroDivisionError" in str(found) and "scale = 10.0" in str(found)
    for rank in range(failing):
        assert not wb.post_mortem(rank).failed, rank

    # a function run with wb.run: its own frame, its arguments and locals
    with pytest.raises(RankFailure):
        wb.run(_index_past, [1, 2], 2)
    frame = wb.post_mortem(failing).frames[-1]
    assert frame["function"] == "_index_past" and frame["locals"] == {"values": "[1, 2]", "n": "2", "data": "[1, 2]"}

    with pytest.raises(ValueError, match=f"rank {wb.n} is not a rank of this world"):
        wb.post_mortem(wb.n)
