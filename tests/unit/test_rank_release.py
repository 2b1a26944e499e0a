"""Letting a rank go (:meth:`RankDebugger.release`, issue 58 items 1 and 4), against a stand-in
for a rank's kernel that answers as ipykernel and debugpy do, with the timing made certain:

* the rank stopped after the Debugger's own moves (no event this client saw says so): its
  debugger's ``stoppedThreads`` does, and it is continued, once;
* a running rank is not continued (debugpy answers a ``continue`` of a running thread only when
  that thread next runs traced code: a release waiting on it waited for ever);
* the release race: the rank reaches its breakpoint as the breakpoints go, and its stop becomes
  known only after its debugger answered what it holds stopped; the stop that comes then is
  continued too. (Before, nothing continued it, and the cell never ended.)
"""

from __future__ import annotations

import queue
import threading
import uuid

from mpiworkbench.client.calls.rank_debugger import RankDebugger


class Channel:
    def __init__(self):
        self.messages: queue.Queue = queue.Queue()

    def get_msg(self, timeout=None):
        return self.messages.get(timeout=timeout)


class Rank:
    """One rank's kernel: its debugger's answers (``stopped``: the threads its debugger holds
    stopped; ``late``: a stop that becomes known just after the first ``debugInfo``)."""

    def __init__(self, stopped=(), late=None, kernels_own=()):
        self.stopped = set(stopped) | set(kernels_own)
        self.own = set(kernels_own)  # listed stopped, but not debugpy's: no frames
        self.late = late
        self.continued: list[int] = []
        self.control, self.iopub = Channel(), Channel()
        outer = self

        class Session:
            def msg(self, kind, content):
                return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": kind}, "content": content}

        class Control:
            def send(self, msg):
                outer.answer(msg)

            def get_msg(self, timeout=None):
                return outer.control.get_msg(timeout)

        self.session, self.control_channel, self.iopub_channel = Session(), Control(), self.iopub

    def reply(self, msg, body=None, success=True):
        content = {"type": "response", "command": msg["content"]["command"], "success": success}
        if body is not None:
            content["body"] = body
        self.control.messages.put({"parent_header": {"msg_id": msg["header"]["msg_id"]}, "content": content})

    def event(self, name, body):
        self.iopub.messages.put({"msg_type": "debug_event", "content": {"event": name, "body": body}})

    def answer(self, msg):
        command, arguments = msg["content"]["command"], msg["content"]["arguments"]
        if command == "debugInfo":
            self.reply(msg, {"isStarted": True, "stoppedThreads": sorted(self.stopped), "breakpoints": []})
            if self.late is not None:  # the stop its debugger had not heard of when it answered
                thread, self.late = self.late, None
                self.stopped.add(thread)
                threading.Timer(0.05, self.event, ["stopped", {"threadId": thread, "reason": "breakpoint"}]).start()
        elif command == "stackTrace":
            thread = arguments["threadId"]
            frames = [{"id": 1, "name": "<module>", "line": 4}] if thread in self.stopped - self.own else []
            self.reply(msg, {"stackFrames": frames})
        elif command == "continue":
            if arguments["threadId"] not in self.stopped - self.own:
                return  # debugpy: no answer until that thread runs traced code again
            self.continued.append(arguments["threadId"])
            self.stopped.clear()
            self.reply(msg, {"allThreadsContinued": True})
        else:
            self.reply(msg, {})

    def stop_channels(self):
        pass


def _debugger(rank: Rank) -> RankDebugger:
    debugger = RankDebugger.__new__(RankDebugger)
    debugger.__dict__.update(rank=1, timeout=5.0, client=rank, _seq=0, _events=queue.SimpleQueue(), _replies={},
                             stopped=None, _breakpoint_files={"/tmp/ipykernel_1/cell.py"}, joined=True, note=None)
    return debugger


def _released(rank: Rank) -> None:
    debugger = _debugger(rank)
    for msg_id, command in debugger.release():
        debugger.response(msg_id, command)


def test_a_rank_the_debugger_moved_is_continued_once_from_its_debuggers_state():
    rank = Rank(stopped={7})  # stopped after Next twice: no event of it reached this client
    _released(rank)
    assert rank.continued == [7]


def test_a_running_rank_is_not_continued():
    rank = Rank()
    _released(rank)  # (a continue of a running thread is never answered: this would wait its timeout)
    assert rank.continued == []


def test_a_stop_that_becomes_known_as_the_breakpoints_go_is_continued_too():
    rank = Rank(late=7)
    _released(rank)
    assert rank.continued == [7]


def test_the_kernels_own_threads_listed_stopped_but_without_frames_are_not_continued():
    """ipykernel lists every thread when debugpy stops them all; its own threads show no frames,
    and continuing one would wait for ever: the thread with frames is the one continued."""
    rank = Rank(stopped={9}, kernels_own={3})
    debugger = _debugger(rank)
    assert debugger.stopped_threads(debugger.ask_stopped(), 5.0) == [9]
    _released(Rank(stopped={9}, kernels_own={3}))
    rank = Rank(kernels_own={3})
    _released(rank)
    assert rank.continued == []
