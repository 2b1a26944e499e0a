"""``mpiworkbench debug FILE`` (a rank's debugger in a terminal) refuses bad input naming it; what
it does with a stopped rank is tested in ``tests/cluster/test_debug_terminal.py``."""

from __future__ import annotations

from pathlib import Path

from mpiworkbench.cli import main
from mpiworkbench.cli.debug import HELP, MOVES, rank_of


def test_a_missing_connection_file_or_a_timeout_not_above_zero_is_refused_naming_it(tmp_path, capsys):
    missing = tmp_path / "mpiworkbench-mpiwb-x-g1-rank1.json"
    assert main(["debug", str(missing)]) == 2
    assert f"connection file {str(missing)!r} does not exist" in capsys.readouterr().err
    missing.write_text("{}")
    assert main(["debug", str(missing), "--timeout", "0"]) == 2
    assert "--timeout 0.0" in capsys.readouterr().err


def test_the_rank_is_read_from_the_file_name_and_every_move_is_in_the_help():
    assert rank_of(Path("/x/mpiworkbench-mpiwb-1a2b-g3-rank12.json")) == 12
    assert rank_of(Path("/x/kernel-1234.json")) is None
    for letter in ("n", "s", "r", "c"):
        assert MOVES[letter] and f"{letter}(" in HELP
