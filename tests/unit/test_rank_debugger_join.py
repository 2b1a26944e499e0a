"""A rank's debugger started while another client (JupyterLab's sidebar on a console of that
rank) switches its own on: whoever initializes second joins the session instead of failing."""

from __future__ import annotations

import pytest

from mpiworkbench.client.calls.rank_debugger import DebuggerError, RankDebugger


class Scripted(RankDebugger):
    """A RankDebugger whose kernel answers from a script (no kernel, no sockets)."""

    def __init__(self, answers):
        self.rank, self.timeout, self.stopped, self.joined = 1, 5.0, None, False
        self.answers, self.sent, self._replies = answers, [], {}

    def send(self, command, **arguments):
        self.sent.append(command)
        self._replies[command + str(len(self.sent))] = self.answers[command].pop(0)
        return command + str(len(self.sent))

    def _await(self, msg_id, command):
        return self._replies.pop(msg_id)


def ok(**body):
    return {"success": True, "body": body}


def test_started_by_no_one_it_initializes_and_attaches():
    dbg = Scripted({"debugInfo": [ok(isStarted=False)], "initialize": [ok()], "attach": [ok()]}).start()
    assert dbg.sent == ["debugInfo", "initialize", "attach"] and not dbg.joined


def test_initialized_by_another_client_in_between_it_joins():
    dbg = Scripted({
        "debugInfo": [ok(isStarted=False), ok(isStarted=True, stoppedThreads=[])],
        "initialize": [{"success": False, "message": "Session is already initialized"}],
        "threads": [ok(threads=[])],
    }).start()
    assert dbg.joined
    assert dbg.sent == ["debugInfo", "initialize", "debugInfo", "threads"]  # no second attach


def test_another_failure_of_initialize_is_said():
    with pytest.raises(DebuggerError, match="rank 1: debug request 'initialize' failed: no adapter"):
        Scripted({"debugInfo": [ok(isStarted=False)],
                  "initialize": [{"success": False, "message": "no adapter"}]}).start()
