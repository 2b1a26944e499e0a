"""``%%px`` output at many ranks: identical output merged under rank ranges, differing output per
rank, errors once per type with the ranks that raised them, and a cap with the way to see all."""

from __future__ import annotations

from mpiworkbench.client.errors import RankFailure, RankStatus, status_lines
from mpiworkbench.client.calls.output import SHOW_LINE_CHARS, SHOW_LINES, GroupedOutput, RankOutput


def _failed(rank: int, error: str) -> RankStatus:
    ename = error.split(":", 1)[0]
    return RankStatus(rank, 100 + rank, "failed", error, ["Traceback (most recent call last):",
                                                          f'  Cell In[3], line {1 + rank % 2}', error])


def test_identical_output_of_64_ranks_is_one_block_with_the_rank_range():
    grouped = GroupedOutput([RankOutput(r, stdout="same line\nand another\n", result="42") for r in range(64)])
    assert grouped.lines() == ["[stdout:0-63] same line", "and another", "Out[0-63]: 42"]


def test_differing_output_is_shown_rank_by_rank_and_alike_ranks_share_a_label():
    outputs = [RankOutput(r, stdout=f"rank {r}\n" if r < 3 else "rest\n", stderr="warn\n" if r == 5 else "")
               for r in range(8)]
    lines = GroupedOutput(outputs).lines()
    assert lines == ["[stdout:0] rank 0", "[stdout:1] rank 1", "[stdout:2] rank 2", "[stdout:3-7] rest",
                     "[stderr:5] warn"]


def test_errors_are_grouped_by_type_with_one_traceback_and_the_ranks():
    statuses = ([_failed(r, "ZeroDivisionError: division by zero") for r in range(0, 40)]
                + [_failed(r, f"KeyError: 'k{r}'") for r in (40, 41, 50)] + [RankStatus(r, r, "ok") for r in range(51, 64)])
    lines = GroupedOutput([RankOutput(s.rank, status=s if s.state == "failed" else None) for s in statuses]).lines()
    assert lines.count("Traceback (most recent call last):") == 2  # one per type, not one per rank
    assert lines.index("--- ranks 0-39 ---") < lines.index("--- ranks 40, 41, 50 ---")
    assert "(KeyError on 3 ranks, 3 different messages:)" in lines and "  rank 50: KeyError: 'k50'" in lines
    # the same grouping when the failure is raised (%%px raises a RankFailure)
    rendered = RankFailure(statuses)._render_traceback_()
    assert rendered.count("Traceback (most recent call last):") == 2
    # beyond a few ranks the report's per-rank lines are grouped by outcome too
    assert status_lines(statuses) == ["  ranks 0-39: failed with ZeroDivisionError: division by zero",
                                      "  rank 40: failed with KeyError: 'k40'", "  rank 41: failed with KeyError: 'k41'",
                                      "  rank 50: failed with KeyError: 'k50'", "  ranks 51-63: finished"]


def test_output_is_capped_and_everything_is_one_call_away(capsys):
    many = "\n".join(f"line {i}" for i in range(SHOW_LINES * 3))
    wide = "x" * (SHOW_LINE_CHARS * 50)
    grouped = GroupedOutput([RankOutput(0, stdout=many), RankOutput(1, stdout=wide)])
    shown = grouped.text().splitlines()
    assert len(shown) == SHOW_LINES + 1 and "wb.last_output.show_all()" in shown[-1]
    assert f"({SHOW_LINES * 2 + 1:,} more lines)" in shown[-1]
    grouped.show_all()
    everything = capsys.readouterr().out
    assert wide in everything and f"line {SHOW_LINES * 3 - 1}" in everything
    narrow = GroupedOutput([RankOutput(1, stdout=wide)]).text()
    assert len(narrow) < SHOW_LINE_CHARS + 200 and "more characters" in narrow
    assert grouped.raw().splitlines()[0] == "[stdout:0] line 0"


def test_errors_can_be_left_to_the_raised_failure():
    grouped = GroupedOutput([RankOutput(0, stdout="hi\n", status=_failed(0, "ValueError: bad"))])
    assert grouped.text(errors=False) == "[stdout:0] hi"
    assert "ValueError: bad" in grouped.text()


def test_lines_every_rank_shares_are_shown_once_and_only_the_differing_lines_per_rank():
    outputs = [RankOutput(r, stdout=f"start\n{'odd' if r % 2 else 'even'}\n" + ("extra\n" if r == 3 else "") + "end\n")
               for r in range(6)]
    assert GroupedOutput(outputs).lines() == ["[stdout:0-5] start", "[stdout:0, 2, 4] even", "[stdout:1, 5] odd",
                                              "[stdout:3] odd", "extra", "[stdout:0-5] end"]
