"""``%%px --debug [RANKS] [--break LINES]``: the options split off the rest of the line."""

import pytest

from mpiworkbench.client.calls.debug_cell import debug_options, first_code_line


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


def test_a_curve_secured_cluster_is_always_reached_through_the_proxy():
    from types import SimpleNamespace

    from mpiworkbench.client.calls.debugging import proxied

    curve = SimpleNamespace(client=SimpleNamespace(curve_serverkey=b"x" * 40))
    plain = SimpleNamespace(client=SimpleNamespace(curve_serverkey=None))
    assert proxied(curve) and proxied(curve, proxy=False)  # its ranks' kernels are never bound
    assert not proxied(plain) and proxied(plain, proxy=True)


def test_the_former_relay_keyword_still_works_and_says_its_new_name():
    from mpiworkbench.client.calls.debugging import _proxy_asked

    assert _proxy_asked(None, None, "debug") is None and _proxy_asked(True, None, "debug") is True
    with pytest.warns(DeprecationWarning, match=r"connection_file\(relay=...\) is now connection_file\(proxy=...\)"):
        assert _proxy_asked(None, True, "connection_file") is True


def test_a_stop_event_tells_where_the_users_code_stopped():
    """What a kernel proxy, seeing only the events of a rank on another host, shows."""
    from mpiworkbench.trace import stops

    import threading

    event = {"event": "stopped", "body": {"reason": "breakpoint", "threadId": 1}}
    recorder = threading.Thread(target=stops.record, args=(event,))  # as the kernel's control thread does
    recorder.start()
    recorder.join()  # (the main thread: in this function, waiting)
    try:
        where = event["body"][stops.WHERE_KEY]
        assert where["file"] == __file__ and where["function"] == "test_a_stop_event_tells_where_the_users_code_stopped"
    finally:
        stops.record({"event": "continued", "body": {}})
        stops._remove(stops.stop_path(__import__("os").getpid()))


def test_stop_records_count_only_the_pauses_inside_a_window():
    from mpiworkbench.trace import stops

    record = {"stopped_since": None, "pauses": [[10.0, 14.0], [20.0, 21.0]], "where": None, "reason": None}
    assert stops.paused_within(record, since=12.0, now=30.0) == 2.0 + 1.0
    assert stops.paused_within(record, since=0.0, now=11.0) == 1.0  # a pause still under way at *now*
    assert not stops.is_stopped(record) and stops.paused_within(None, 0.0, 1.0) == 0.0
    now_stopped = {**record, "stopped_since": 25.0}
    assert stops.is_stopped(now_stopped) and stops.paused_within(now_stopped, since=24.0, now=30.0) == 5.0


def test_where_a_rank_stopped_reads_as_a_cell_line_or_a_function():
    from mpiworkbench.trace import stops

    cell = {"where": {"file": "/tmp/ipykernel_123/456.py", "line": 4, "function": "<module>"}, "reason": "breakpoint"}
    assert stops.describe(0, cell) == "rank 0 stopped at a breakpoint (cell line 4)"
    package = {"where": {"file": "/x/mpiworkbench/solvers/halo.py", "line": 52, "function": "exchange"}, "reason": "step"}
    assert stops.describe(2, package) == "rank 2 stopped after a step (halo.py line 52, in exchange)"
