"""A call left running: its wait given up (an interrupt, a debugging session left) while it still
runs on the ranks. The next call looks at it first.

An interrupt reaches the ranks' Python at once, but not a rank inside an MPI call: when some ranks
were interrupted out of a collective (or a receive) that others had entered, those others wait
forever, and every later call would queue behind them until its own timeout, and then report them
as "still running" with nothing named (what a ``%%px --debug`` cell interrupted at its breakpoint
did). Judged from its hang report instead, such a call refuses the next one at once, naming which
ranks wait in which call for which peer, and what to do.
"""

from __future__ import annotations

from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.client.calls.call import Call
from mpiworkbench.client.calls.trace import explain_timeout
from mpiworkbench.client.errors import ExecutionTimeout, WorldBlocked
from mpiworkbench.trace.stacks import stack_whole

#: Seconds a call left running may take to end before the next call judges what it left.
GRACE_S = 3.0


class Left:
    """The call of a session whose wait was given up while it still ran, if any."""

    def __init__(self) -> None:
        self.call: Call | None = None
        self.view: Any = None  # the view it ran on (a world restarted since has ended it)
        self.stuck = ""  # once judged unable to end: which ranks wait in what

    def leave(self, call: Call, view: Any) -> None:
        """The caller stops waiting for *call*, sent through *view*."""
        if not call.done():
            self.call, self.view, self.stuck = call, view, ""

    def judge(self, executor) -> None:
        """Before *executor* sends a call: give the call left running :data:`GRACE_S` to end, then
        judge it from its hang report. With a rank still inside an MPI call that another rank has
        left (interrupted out of it, or failed), raise
        :class:`~mpiworkbench.client.errors.WorldBlocked` (and keep raising it while that lasts,
        without waiting again); still computing, it is let go: calls wait their turn behind it,
        as behind any call."""
        left = self.call
        if left is None:
            return
        if self.view is not executor.session.view or left.wait(0.0 if self.stuck else GRACE_S):
            self.call, self.view, self.stuck = None, None, ""
            return
        if not self.stuck:
            try:
                executor.wait_explained(left, 0.0, raise_failures=False, grace=0.0, explain=False)
            except ExecutionTimeout as exc:
                report = explain_timeout(executor.session, exc, left)
                stuck = [r for r in report.ranks
                         if r.state == "running" and r.inflight is not None and r.inflight.call is not None]
                unbegun = _not_begun(left, executor.session.ranks) if stuck else set()
                if stuck and any(_left_the_call(r) for r in report.ranks if r.rank not in unbegun):
                    where = "\n".join(report.hang_lines)
                    self.stuck = (f"{', '.join(f'rank {r.rank}' for r in stuck)} wait{'s' if len(stuck) == 1 else ''} "
                                  f"inside an MPI call that the ranks interrupted out of it will never join.\n"
                                  f"Where each rank is:\n{where}")
                    left.mark_blocked(where)
            if not self.stuck:  # ended meanwhile, or still computing
                self.call, self.view = None, None
                return
        raise WorldBlocked(f"the call you interrupted ({left.label}) still runs on the ranks and cannot end: "
                           f"{self.stuck}\nNothing was sent. Restart the world to go on: wb.restart() "
                           "(everything on the ranks is lost)")


def _not_begun(call: Call, rank_of: dict[int, int]) -> set[int]:
    """The ranks known not to have begun *call* yet: for a call whose engines say when they begin
    it (a ``%%px`` cell), those whose ``execute_input`` has not come in. On a loaded machine a rank
    may take seconds to take a cell up; like a rank that left it, it runs no line of it, but it
    will join its peers."""
    if not call.announces_start:
        return set()
    return {rank_of.get(engine, engine) for engine, came in zip(upstream.targets(call.ar), upstream.execute_inputs(call.ar))
            if not came}


def _left_the_call(rank) -> bool:
    """Whether *rank* (a hang report's :class:`~mpiworkbench.trace.hang.RankState`) no longer runs
    the call: it ended (interrupted out of it, or failed), or it runs no line of the call (outside
    MPI, no user code on its stack: back in its engine's loop, its reply not in). Only such a rank
    leaves the others inside MPI waiting for ever; while every rank still runs the call (a peer
    computing, sleeping or stopped in a debugger on a loaded machine), the call is merely slow. A
    rank whose stack could not be read whole (cut short, another host's rank outside MPI) is not
    known to have left: the call is then slow, and the next call's own time-out reports it."""
    if rank.state != "running":
        return True
    if rank.inflight is not None and rank.inflight.call is not None:
        return False
    return stack_whole(rank.stack) and rank.line is None
