"""One rank's debugger, driven as JupyterLab drives a kernel's: the Debug Adapter Protocol in
``debug_request`` / ``debug_reply`` messages on the kernel's control channel, its events in
``debug_event`` messages on IOPub (ipykernel relays both to debugpy), over the rank's own
kernel connection (:func:`mpiworkbench.client.calls.debugging.connection_files`). Any rank, any host:
only its connection file is needed. :class:`~mpiworkbench.client.calls.debugging.Debugging` drives
several at once."""

from __future__ import annotations

import os
import queue
import time
from typing import Any, Callable, Iterable

from mpiworkbench.client.errors import WorkbenchError

#: What debugpy answers an ``initialize`` when another client initialized its session already.
ALREADY_INITIALIZED = "already initialized"
#: Seconds a debug request may take (debugpy's first start, an import of its adapter, is the slow one).
REQUEST_TIMEOUT_S = 60.0
#: Seconds a rank asked what it holds stopped may take before it is taken to be busy in MPI (and
#: asked again once the others were let go): a stopped rank answers at once.
ASK_STOPPED_S = 3.0
#: Seconds a released rank is watched for a stop that was under way as its breakpoints went.
LATE_STOP_S = 1.0


class DebuggerError(WorkbenchError):
    """A debug request failed or did not answer."""


class NoAnswer(DebuggerError):
    """A debug request got no answer in time."""


#: Said when a rank's first ``initialize`` gets no answer: why, and what to do.
FIRST_START_BUSY = ("; the first time a rank is debugged, its debugger starts on the rank's main thread, which must "
                    "be idle: if the rank runs a cell or function now, wait for it or interrupt it, then debug again "
                    "(from then on a debugger starts on the rank at once, even while it runs)")


class RankDebugger:
    """One rank's debugger, driven as JupyterLab drives a kernel's: ``debug_request`` messages
    on the kernel's control channel (DAP requests), ``debug_event`` messages on its IOPub."""

    def __init__(self, rank: int, connection_file: str | os.PathLike, timeout: float = REQUEST_TIMEOUT_S,
                 note: Callable[[str], None] | None = None):
        """*note*: told each file a breakpoint is asked in, before it is asked (the session's
        record: :meth:`~mpiworkbench.client.calls.debug_records.Record.note`)."""
        import zmq
        from jupyter_client import BlockingKernelClient

        self.rank = rank
        self.timeout = timeout
        # the process's one context, not a context of its own (jupyter_client's default): a
        # client dropped half-made (an interrupt during a start) left its context to the garbage
        # collector, whose term() then waited for ever, in whatever the kernel ran next
        self.client = BlockingKernelClient(connection_file=str(connection_file), context=zmq.Context.instance())
        self.client.load_connection_file()
        self.client.start_channels(shell=False, iopub=True, stdin=False, hb=False, control=True)
        self._seq = 0
        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._replies: dict[str, dict[str, Any]] = {}
        self.stopped: dict[str, Any] | None = None
        self._breakpoint_files: set[str] = set()
        self.joined = False
        self.note = note

    # -- transport
    def send(self, command: str, **arguments: Any) -> str:
        """Send the DAP request *command* without waiting; its id for :meth:`response`."""
        self._seq += 1
        content = {"type": "request", "seq": self._seq, "command": command, "arguments": arguments}
        msg = self.client.session.msg("debug_request", content)
        self.client.control_channel.send(msg)
        return msg["header"]["msg_id"]

    def _await(self, msg_id: str, command: str) -> dict[str, Any]:
        """The response to the request *msg_id*, failed or not; :class:`DebuggerError` when
        none came in :attr:`timeout` seconds."""
        deadline = time.monotonic() + self.timeout
        while msg_id not in self._replies:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoAnswer(f"rank {self.rank}: no answer to the debug request {command!r} in "
                               f"{self.timeout:.0f} s")
            try:
                reply = self.client.control_channel.get_msg(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            self._replies[reply["parent_header"].get("msg_id")] = reply["content"]
        return self._replies.pop(msg_id)

    def response(self, msg_id: str, command: str = "the request") -> dict[str, Any]:
        """The response to the request *msg_id* (:meth:`send`); :class:`DebuggerError` when it
        failed or did not come in :attr:`timeout` seconds."""
        response = self._await(msg_id, command)
        if response.get("success") is False:
            raise DebuggerError(f"rank {self.rank}: debug request {command!r} failed: "
                                f"{response.get('message') or response}")
        return response

    def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        """Send the DAP request *command* and return its response (``success``, ``body``)."""
        return self.response(self.send(command, **arguments), command)

    def body(self, command: str, **arguments: Any) -> dict[str, Any]:
        """The body of the response to the DAP request *command*; :class:`DebuggerError` when
        there is none (the kernel answers nothing while its debugger is not started: another
        client ended it meanwhile)."""
        response = self.request(command, **arguments)
        if "body" not in response:
            raise DebuggerError(f"rank {self.rank}: debug request {command!r} got no answer: its debugger "
                                f"is not started (another client ended it)")
        return response["body"]

    def _drain(self, timeout: float) -> bool:
        """Take in one message of the rank's IOPub (waiting *timeout* seconds at most); whether one came."""
        try:
            msg = self.client.iopub_channel.get_msg(timeout=timeout)
        except queue.Empty:
            return False
        if msg["msg_type"] == "debug_event":
            event = msg["content"]
            if event.get("event") == "stopped":
                self.stopped = event["body"]
            elif event.get("event") == "continued":
                self.stopped = None
            self._events.put(event)
        return True

    def wait_for(self, event: str, timeout: float | None = None) -> dict[str, Any]:
        """The next debug event named *event* (``"stopped"``, ``"continued"``…)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            while not self._events.empty():
                found = self._events.get()
                if found.get("event") == event:
                    return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise DebuggerError(f"rank {self.rank}: no {event!r} event in "
                                    f"{self.timeout if timeout is None else timeout:.0f} s")
            self._drain(min(left, 0.5))

    # -- a session
    def start(self) -> "RankDebugger":
        """``initialize`` and ``attach``, as JupyterLab does when its debugger is switched on —
        unless another client (JupyterLab's sidebar on a console of this rank) has started it
        already: then this one joins, and leaves it running when it closes."""
        info = self.body("debugInfo")
        if not info.get("isStarted"):
            try:
                self.request("initialize", clientID="mpiworkbench", clientName="mpiworkbench", adapterID="python",
                             pathFormat="path", linesStartAt1=True, columnsStartAt1=True, supportsVariableType=True,
                             supportsVariablePaging=True, supportsRunInTerminalRequest=False, locale="en")
            except NoAnswer as exc:  # (the caller abandons the start: its late end is undone)
                raise NoAnswer(f"{exc}{FIRST_START_BUSY}") from None
            except DebuggerError as exc:
                if ALREADY_INITIALIZED not in str(exc):
                    raise
                # the other client's initialize came in between the two requests (the lab's
                # sidebar switched on just before): join its session as if it had been started
                info = self.body("debugInfo")
            else:
                self.request("attach")
                return self
        self.joined = True
        self._attached()
        self._find_stopped(info.get("stoppedThreads") or [])
        return self

    def _attached(self) -> None:
        """Wait until the other client's debugger is attached to debugpy: the kernel says it
        started once ``initialize`` succeeded, and until that client's ``attach`` has too,
        debugpy answers any request "Server is not available"."""
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._await(self.send("threads"), "threads")
            if reply.get("success") is not False:
                return
            if time.monotonic() > deadline:
                raise DebuggerError(f"rank {self.rank}: the debugger another client started did not attach "
                                    f"in {self.timeout:.0f} s: {reply.get('message') or reply}")
            time.sleep(0.1)  # polling the condition "attached"

    def _find_stopped(self, threads: list[int]) -> None:
        """Joining a debugger whose rank is stopped already (its ``stopped`` event went out
        before this client listened): the stopped thread is the one with frames of user code
        (debugpy stops every thread; the kernel's own show none, hidden as not the user's)."""
        for thread in sorted(threads):
            frames = self.body("stackTrace", threadId=thread).get("stackFrames") or []
            if frames:
                self.stopped = {"threadId": thread, "reason": "joined"}
                return

    def cell_path(self, code: str) -> str:
        """The file the rank compiles *code* to when a ``%%px`` cell sends it (``dumpCell``)."""
        return self.body("dumpCell", code=code)["sourcePath"]

    def set_breakpoints(self, path: str, lines: Iterable[int]) -> list[int]:
        """Breakpoints at *lines* of *path* (replacing that file's); the lines debugpy took."""
        self._breakpoint_files.add(str(path))
        if self.note is not None:
            self.note(str(path))
        body = self.body("setBreakpoints", source={"path": str(path)},
                         breakpoints=[{"line": int(n)} for n in lines], sourceModified=False)
        self.request("configurationDone")
        return [b.get("line") for b in body.get("breakpoints", []) if b.get("verified", True)]

    def source(self, path: str) -> str:
        """The text of *path* as the rank's kernel reads it (a cell's file, on the rank's host);
        ``""`` when it cannot."""
        response = self._await(self.send("source", source={"path": str(path)}), "source")
        return (response.get("body") or {}).get("content", "") if response.get("success") is not False else ""

    def _thread(self) -> int:
        if self.stopped is None:
            self._drain(0)
        if self.stopped is None:
            raise DebuggerError(f"rank {self.rank} is not stopped")
        return self.stopped["threadId"]

    def stack(self) -> list[dict[str, Any]]:
        """The stopped thread's frames, innermost first (``id``, ``name``, ``line``, ``source``)."""
        return self.body("stackTrace", threadId=self._thread())["stackFrames"]

    def place(self) -> dict[str, Any]:
        """Where the stopped thread is (``file``, ``line``, ``function``): what
        :func:`mpiworkbench.trace.stops.where_text` names ("cell line 4")."""
        frame = self.stack()[0]
        return {"file": (frame.get("source") or {}).get("path", ""), "line": frame["line"], "function": frame["name"]}

    def variables(self, frame: int = 0) -> dict[str, str]:
        """The local variables of the *frame*-th frame (0: where it stopped) as shown (``repr``)."""
        frame_id = self.stack()[frame]["id"]
        scopes = self.body("scopes", frameId=frame_id)["scopes"]
        local = next((s for s in scopes if s["name"].lower().startswith("local")), scopes[0])
        found = self.body("variables", variablesReference=local["variablesReference"])["variables"]
        return {v["name"]: v["value"] for v in found}

    def evaluate(self, expression: str, frame: int = 0) -> str:
        """*expression* evaluated in the *frame*-th frame (0: where it stopped), as shown (``repr``)."""
        frame_id = self.stack()[frame]["id"]
        return self.body("evaluate", expression=expression, frameId=frame_id, context="repl")["result"]

    def _move(self, command: str, wait: bool = True) -> str:
        thread = self._thread()
        self.stopped = None
        msg_id = self.send(command, threadId=thread)
        if wait:
            self.response(msg_id, command)
        return msg_id

    def next(self) -> None:
        """Step over one line (the rank stops again: :meth:`wait_for` ``"stopped"``)."""
        self._move("next")

    def step_in(self) -> None:
        self._move("stepIn")

    def step_out(self) -> None:
        self._move("stepOut")

    def continue_(self) -> None:
        """Run on until the next breakpoint or the end of the cell."""
        self._move("continue")

    def release(self) -> list[tuple[str, str]]:
        """Send what lets this rank alone run on: every breakpoint dropped, then ``continue``
        if its debugger holds it stopped (:meth:`stopped_threads`), then any stop still under way
        continued (:meth:`late_stops`). The (request id, command) pairs to wait for.
        (:meth:`~mpiworkbench.client.calls.debugging.Debugging.close` does the same for several
        ranks, each step on every rank before the next.)"""
        sent = self.drop_breakpoints()
        sent += self.continue_threads(self.stopped_threads(self.ask_stopped(), self.timeout) or [])
        return sent + self.late_stops(time.monotonic() + LATE_STOP_S)

    def drop_breakpoints(self) -> list[tuple[str, str]]:
        """Send ``setBreakpoints`` with none for every file this client set some in (not waiting)."""
        sent = [(self.send("setBreakpoints", source={"path": path}, breakpoints=[]), "setBreakpoints")
                for path in self._breakpoint_files]
        self._breakpoint_files.clear()
        return sent

    def ask_stopped(self) -> str:
        """Ask the rank's debugger what it holds stopped (``debugInfo``, not waiting; sent after
        :meth:`drop_breakpoints`, it is answered after they are gone)."""
        return self.send("debugInfo")

    def stopped_threads(self, asked: str, timeout: float) -> list[int] | None:
        """The threads the rank's debugger holds suspended, from its answer to *asked*
        (:meth:`ask_stopped`): its ``stoppedThreads``, each confirmed by debugpy (``stackTrace``
        answers frames for a suspended thread only) — the debugger's own state, not the events
        this client happened to see (the Debugger panel's Next, Step or Pause, a stop that came
        before this client listened). ``None`` when no answer came in *timeout* seconds: the
        rank is busy (in mpi4py's pickled collective it holds Python's lock until its peers come)."""
        saved, self.timeout = self.timeout, timeout
        try:
            info = self._await(asked, "debugInfo").get("body") or {}
        except DebuggerError:
            return None
        finally:
            self.timeout = saved
        if not info.get("isStarted"):
            return []
        return [thread for thread in sorted(info.get("stoppedThreads") or []) if self._suspended(thread)]

    def _suspended(self, thread: int) -> bool:
        response = self._await(self.send("stackTrace", threadId=thread), "stackTrace")
        return response.get("success") is not False and bool((response.get("body") or {}).get("stackFrames"))

    def continue_threads(self, threads: list[int]) -> list[tuple[str, str]]:
        """Send ``continue`` for the first of the suspended *threads* (debugpy resumes every
        thread of the rank with it), not waiting: one ``continue`` for a stopped rank, none for
        a running one."""
        self._drain_all()
        self.stopped = None
        return [(self.send("continue", threadId=threads[0]), "continue")] if threads else []

    def late_stops(self, deadline: float) -> list[tuple[str, str]]:
        """Until *deadline* (``time.monotonic()``), ``continue`` every stop this client hears of:
        a rank that reached a breakpoint just as the breakpoints went (its debugger had not yet
        heard of that stop when it was asked) is let go too."""
        sent = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return sent
            self._drain(min(left, 0.1))
            if self.stopped is not None:
                thread, self.stopped = self.stopped.get("threadId"), None
                if thread is not None:
                    sent.append((self.send("continue", threadId=thread), "continue"))

    def _drain_all(self) -> None:
        """Take in every message already waiting (the last event says where the rank is)."""
        while self._drain(0):
            pass

    def detach(self) -> None:
        """End the debugger session (``disconnect``: debugpy stops tracing the rank's code),
        unless another client started it (:meth:`start`)."""
        if not self.joined:
            self.request("disconnect", restart=False, terminateDebuggee=False)

    def release_left_behind(self) -> str:
        """Let the rank go when the client that debugged it has died
        (:mod:`~mpiworkbench.client.calls.debug_records`): every breakpoint its debugger holds
        dropped (whoever set it), ``continue`` when it is stopped, and ``disconnect``; what was
        done. A rank whose debugger is not started is left as it is."""
        info = self.body("debugInfo")
        if not info.get("isStarted"):
            return "its debugger was not started"
        self.joined = True
        self._find_stopped(info.get("stoppedThreads") or [])
        stopped = self.stopped is not None
        self._breakpoint_files.update(b["source"] for b in info.get("breakpoints") or [] if b.get("source"))
        for msg_id, command in self.release():
            self.response(msg_id, command)
        self.request("disconnect", restart=False, terminateDebuggee=False)
        return "continued and detached" if stopped else "detached"

    def abandon(self, wait_s: float = 5.0) -> None:
        """After a :meth:`start` that failed or was interrupted: end the session it may have begun
        (``disconnect``, awaited *wait_s* seconds at most: the next client must find the rank's
        debugger unstarted, not initialized with no one attached) and close the channels."""
        try:
            if not self.joined:
                self.timeout = wait_s
                self.request("disconnect", restart=False, terminateDebuggee=False)
        except Exception:  # noqa: BLE001 - best effort: the channels close whatever happened
            pass
        finally:
            self.client.stop_channels()

    def close(self) -> None:
        """Drop every breakpoint, continue and detach: the rank runs on (``disconnect``)."""
        try:
            for msg_id, command in self.release():
                self.response(msg_id, command)
            self.detach()
        finally:
            self.client.stop_channels()
