"""``mpiworkbench debug FILE``: one rank's debugger in a terminal, for a lab without the sidebar.

A ``%%px --debug`` cell stops ranks for JupyterLab's Debugger, which the MPI world sidebar puts on
a rank. A lab without the lab part (a centre's JupyterLab, the user's kernel) has no sidebar and
lists no rank kernels, and a console on a stopped rank does not answer (its kernel's shell waits
for the stop). Its debugger still does: this command speaks to it as JupyterLab's Debugger does
(:class:`~mpiworkbench.client.calls.rank_debugger.RankDebugger`: the debug protocol on the kernel's
control channel), from any terminal of the host, with pdb's letters::

    $ python -m mpiworkbench debug …/mpiworkbench-mpiwb-…-rank1.json
    rank 1 stopped: cell line 3
       3  y = x + kept
    (rank 1) p y
    ...

It joins the notebook's debugging session and leaves it as it found it: ``q`` leaves the rank
where it is (the notebook's cell, interrupted or ended, lets every rank go).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

#: pdb's letters (and words) → what they do.
MOVES = {"n": "next", "next": "next", "s": "step_in", "step": "step_in", "r": "step_out", "return": "step_out",
         "c": "continue_", "cont": "continue_", "continue": "continue_"}
HELP = ("n(ext): the next line · s(tep) into a call · r(eturn) from the function · c(ontinue) · p EXPR: its value · "
        "l(ocals) · w(here): the frames · q(uit): leave, the rank as it is · an empty line repeats the last command")
#: Seconds a rank that was moved may run before the prompt says it runs (a step into an MPI call
#: that waits for a peer stops no sooner than the peer comes).
RUNS_AFTER_S = 2.0


def rank_of(path: Path) -> int | None:
    """The rank of a rank's connection file (``…-rank1.json``: 1); None for another kernel's."""
    found = re.search(r"rank(\d+)\.json$", path.name)
    return int(found.group(1)) if found else None


class TerminalDebugger:
    """The prompt's state: the rank's debugger *d*, what it says through *say*."""

    def __init__(self, d, label: str, say=print) -> None:
        self.d, self.label, self.say = d, label, say
        self.sources: dict[str, list[str]] = {}

    def show_stop(self) -> None:
        from mpiworkbench.trace import stops  # (lazy: what a stop is called, once there is one)

        where = self.d.place()
        self.say(f"{self.label} stopped: {stops.where_text({'where': where})}")
        line = self.source(where["file"])[where["line"] - 1:where["line"]]
        if line:
            self.say(f"  {where['line']:3d}  {line[0].rstrip()}")

    def source(self, path: str) -> list[str]:
        """The lines of *path*, read by the rank's kernel (its host's file, a cell's too)."""
        if path and path not in self.sources:
            self.sources[path] = self.d.source(path).splitlines()
        return self.sources.get(path, [])

    def alive(self) -> bool:
        return bool(self.d.body("debugInfo").get("isStarted"))

    def wait_for_stop(self) -> bool:
        """Until the rank stops (True) or its debugging session ends (False); says once that it runs."""
        said, since, checked = False, time.monotonic(), time.monotonic()
        while self.d.stopped is None:
            self.d._drain(0.25)
            now = time.monotonic()
            if not said and now - since > RUNS_AFTER_S:
                self.say(f"{self.label} runs; this waits for its next stop (Ctrl+C leaves)")
                said = True
            if now - checked > RUNS_AFTER_S and self.d.stopped is None:
                checked = now
                if not self.alive():
                    return False
        return True

    def do(self, line: str) -> bool:
        """Carry out one command; False to leave."""
        word, _, rest = line.strip().partition(" ")
        if word in ("q", "quit", "exit"):
            return False
        if word in MOVES:
            getattr(self.d, MOVES[word])()
            if not self.wait_for_stop():
                self.say(f"{self.label}'s debugging session ended (its cell finished or was interrupted)")
                return False
            self.show_stop()
        elif word == "p" and rest.strip():
            self.say(self.d.evaluate(rest.strip()))
        elif word in ("l", "locals"):
            for name, value in self.d.variables().items():
                if not name.endswith(" variables"):  # (debugpy's groups: special, function)
                    self.say(f"  {name} = {value}")
        elif word in ("w", "where", "bt"):
            for frame in self.d.stack():
                self.say(f"  {frame['name']}, line {frame['line']} ({(frame.get('source') or {}).get('path', '?')})")
        else:
            self.say(HELP)
        return True


def prompt_loop(debugger: TerminalDebugger, read=input) -> None:
    """Show where the rank is, then take commands until ``q``, end of input or the session's end."""
    from mpiworkbench.client.calls.rank_debugger import DebuggerError  # (lazy: with the debugger)

    if debugger.d.stopped is None:
        debugger.say(f"{debugger.label} is not stopped; this waits for it to stop at a breakpoint "
                     "(a %%px --debug cell), Ctrl+C leaves")
        if not debugger.wait_for_stop():
            debugger.say(f"{debugger.label}'s debugging session ended")
            return
    debugger.show_stop()
    debugger.say(HELP)
    last = "h"
    while True:
        try:
            line = read(f"({debugger.label}) ").strip() or last
        except EOFError:
            return
        last = line
        try:
            if not debugger.do(line):
                return
        except DebuggerError as exc:
            debugger.say(f"{exc}")
            if not debugger.alive():
                debugger.say(f"{debugger.label}'s debugging session ended")
                return


def run(args: argparse.Namespace) -> int:
    from mpiworkbench.client.calls.rank_debugger import RankDebugger  # (lazy: zmq, jupyter_client)

    path = Path(args.connection_file)
    if not args.timeout > 0:
        raise ValueError(f"--timeout {args.timeout}: give the seconds a request may take, more than 0 (default 60)")
    if not path.is_file():
        raise ValueError(f"connection file {args.connection_file!r} does not exist: give the one a %%px --debug cell "
                         "printed, or wb.connection_file(RANK) names")
    rank = rank_of(path)
    try:
        import readline  # noqa: F401 - (lazy: line editing and history at the prompt, where the platform has it)
    except ImportError:
        pass
    d = RankDebugger(rank=-1 if rank is None else rank, connection_file=path, timeout=args.timeout)
    try:
        d.start()
        try:
            prompt_loop(TerminalDebugger(d, "the kernel" if rank is None else f"rank {rank}"))
        except KeyboardInterrupt:
            print()
        if not d.joined:  # this command started the rank's debugger: it ends it again
            d.detach()
    finally:
        d.client.stop_channels()
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "debug", help="one rank's debugger in a terminal (a lab without the MPI world sidebar)",
        description="Step a rank stopped by a %%px --debug cell from any terminal of its host: n, s, r, c, "
                    "p EXPR, l, w, q, as in pdb. The rank's kernel connection file is what the cell printed.")
    parser.add_argument("connection_file", metavar="FILE", help="the rank's kernel connection file")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds each request to the rank's debugger may take (default 60)")
    parser.set_defaults(func=run)
