"""``%%px --debug [RANKS] [--break LINES]``: the options split off the rest of the line."""

import pytest

from mpiworkbench.client.debugging import debug_options, first_code_line


@pytest.mark.parametrize("line, rest, debug", [
    ("--no-stream", "--no-stream", None),
    ("--debug", "", (None, [])),
    ("--debug 1 --no-stream", "--no-stream", ([1], [])),
    ("--debug 0,2 --break 4", "", ([0, 2], [4])),
    ("--targets 0 --debug 0-2 --break 3,5-6", "--targets 0", ([0, 1, 2], [3, 5, 6])),
    ("--debug --break 7 --trace", "--trace", (None, [7])),
])
def test_debug_options_split_off_the_line(line, rest, debug):
    assert debug_options(line) == (rest, debug)


@pytest.mark.parametrize("line, message", [
    ("--break 4", "needs --debug"),
    ("--debug --break", "needs the cell's line numbers.*got ''"),
    ("--debug --break x", "got 'x'"),
])
def test_bad_debug_options_say_what_to_write(line, message):
    with pytest.raises(ValueError, match=message):
        debug_options(line)


def test_the_default_stop_is_the_first_statement():
    assert first_code_line("\n# set up\nx = 1\n") == 3
    with pytest.raises(ValueError, match="no code"):
        first_code_line("# nothing\n\n")
