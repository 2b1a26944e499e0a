"""What a notebook user sees when ranks fail or hang: one report per rank, and the way out."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RankStatus:
    """The outcome of one rank's part of an execution."""

    rank: int
    engine_id: int
    state: str  # "ok", "failed" or "running"
    error: str = ""  # "ZeroDivisionError: division by zero" when failed
    traceback: list[str] = field(default_factory=list)

    def line(self) -> str:
        if self.state == "failed":
            return f"  rank {self.rank} (engine {self.engine_id}): failed with {self.error}"
        if self.state == "running":
            return f"  rank {self.rank} (engine {self.engine_id}): still running"
        return f"  rank {self.rank} (engine {self.engine_id}): finished"


class WorkbenchError(RuntimeError):
    """Base class of the errors a :class:`~mpiworkbench.client.Workbench` raises."""


class _RankReport(WorkbenchError):
    headline = ""
    advice = ""

    def __init__(self, statuses: list[RankStatus], detail: str = ""):
        self.statuses = sorted(statuses, key=lambda s: s.rank)
        self.detail = detail
        super().__init__(self.report())

    @property
    def failed(self) -> list[int]:
        """The ranks that raised."""
        return [s.rank for s in self.statuses if s.state == "failed"]

    @property
    def running(self) -> list[int]:
        """The ranks still running when the wait ended."""
        return [s.rank for s in self.statuses if s.state == "running"]

    def report(self) -> str:
        """The whole message: headline, one line per rank, advice (and the hang report, if any)."""
        lines = [self.headline + (f" {self.detail}" if self.detail else "")]
        lines += status_lines(self.statuses)
        if self.advice:
            lines.append(self.advice)
        return "\n".join(lines)

    def _render_traceback_(self) -> list[str]:
        # IPython shows this instead of a traceback through the workbench's internals: each
        # error type once, with one full traceback, headed by the ranks that raised it (64
        # ranks failing alike are one traceback, not 64)
        return [f"{type(self).__name__}: {self.report()}", *error_lines(self.statuses)]


#: Up to this many ranks a report has one line per rank; beyond, ranks alike share a line.
LINE_PER_RANK_UP_TO = 8


def status_lines(statuses: list[RankStatus]) -> list[str]:
    """One line per rank (engine ids included) up to :data:`LINE_PER_RANK_UP_TO` ranks; beyond,
    one line per outcome (``ranks 0-62: finished``, ``rank 63: failed with KeyError: 'x'``)."""
    if len(statuses) <= LINE_PER_RANK_UP_TO:
        return [s.line() for s in statuses]
    groups: dict[tuple[str, str], list[int]] = {}
    for s in statuses:
        groups.setdefault((s.state, s.error), []).append(s.rank)
    words = {"ok": "finished", "running": "still running"}
    return [f"  {ranks_text(ranks)}: {words.get(state) or 'failed with ' + error}"
            for (state, error), ranks in sorted(groups.items(), key=lambda item: min(item[1]))]


def error_groups(statuses: list[RankStatus]) -> list[tuple[str, list[RankStatus]]]:
    """The failed ranks grouped by exception type (``ZeroDivisionError``), in order of each
    group's first rank."""
    groups: dict[str, list[RankStatus]] = {}
    for status in sorted(statuses, key=lambda s: s.rank):
        if status.state == "failed":
            groups.setdefault(status.error.split(":", 1)[0], []).append(status)
    return list(groups.items())


def error_lines(statuses: list[RankStatus], show_messages: int = 8) -> list[str]:
    """Each error type once: a header with the ranks that raised it, one full traceback (its
    first rank's), and — when the messages differ within the type — each rank's message (at
    most *show_messages* of them)."""
    lines: list[str] = []
    for ename, group in error_groups(statuses):
        lines.append(f"--- {ranks_text([s.rank for s in group])} ---")
        lines.extend(group[0].traceback or [group[0].error])
        messages = {s.error for s in group}
        if len(messages) > 1:
            lines.append(f"({ename} on {len(group)} ranks, {len(messages)} different messages:)")
            lines.extend(f"  rank {s.rank}: {s.error}" for s in group[:show_messages])
            if len(group) > show_messages:
                lines.append(f"  … {len(group) - show_messages} more (the error's .statuses has them all)")
    return lines


def ranks_text(ranks: list[int]) -> str:
    """``rank 3``, ``ranks 0-2``, ``ranks 0, 2, 5-7``: sorted ranks with runs as ranges."""
    ordered = sorted(set(ranks))
    runs: list[list[int]] = []
    for rank in ordered:
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    parts = [f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)) for run in runs]
    return f"{'rank' if len(ordered) == 1 else 'ranks'} {', '.join(parts)}"


class RankFailure(_RankReport):
    """One or more ranks raised; every rank finished (no rank is left waiting)."""

    headline = "The execution failed on some ranks."


class ExecutionTimeout(_RankReport, TimeoutError):
    """Some ranks did not finish in time — typically blocked in a collective.

    With the hang report attached (:func:`mpiworkbench.client.calls.trace.explain_timeout`):
    ``hang_lines`` say per rank the MPI call it is blocked in and its Python line, ``causes``
    the likely causes, ``ranks`` the raw per-rank states, and ``trace`` (inside ``wb.trace()``)
    the events recorded up to the timeout; ``execution`` is the timed-out ``AsyncResult``.
    """

    headline = "The execution did not finish in time."
    hang_lines: list[str] = []
    causes: list[str] = []
    ranks: list = []
    trace = None
    execution = None

    def attach_hang_report(self, lines: list[str], causes: list[str], ranks: list) -> None:
        """Attach the hang report: per-rank *lines*, likely *causes* and the raw rank states."""
        self.hang_lines, self.causes, self.ranks = list(lines), list(causes), list(ranks)
        self.args = (self.report(),)

    def report(self) -> str:
        """The whole message: headline, one line per rank, advice (and the hang report, if any)."""
        text = super().report()
        if self.hang_lines:
            text += "\nWhere each rank is:\n" + "\n".join(self.hang_lines)
        if self.causes:
            text += "\nLikely cause:\n" + "\n".join(f"  - {c}" for c in self.causes)
        return text

    @property
    def advice(self) -> str:  # type: ignore[override]
        """What to do next, in words (the last paragraph of :meth:`report`)."""
        if self.failed:
            return (
                "The running ranks are most likely blocked in a collective (barrier, bcast, "
                "allreduce, …) or a receive, waiting for a rank that already failed. MPI calls "
                "cannot be interrupted: call wb.restart() for a fresh MPI world."
            )
        return (
            "If this is a long computation, raise wb.timeout or use wb.run_async(). If the "
            "ranks are blocked in communication (a deadlock), call wb.restart() for a fresh "
            "MPI world; wb.interrupt() sends SIGINT, which does not wake a blocked MPI call."
        )


class WorldBusy(WorkbenchError, TimeoutError):
    """Another client of the shared MPI world held it for longer than this call's timeout.
    Nothing was sent to the ranks."""


class EnginesNotStarted(WorkbenchError, TimeoutError):
    """The engines of a cluster the session started did not all register in time: a failed
    launch (the message shows ``mpiexec``'s state and the engines' last output), not busy ranks."""


class WorldBlocked(WorkbenchError):
    """The client holding the shared MPI world reported its work as blocked (it outlived its
    timeout): every call would wait behind it. Nothing was sent to the ranks."""


class WorldRestarted(WorkbenchError):
    """Another client restarted the MPI world since this session's last call: everything this
    session had on the ranks is gone. The session is already connected to the new ranks."""


class WorldDied(WorkbenchError):
    """The MPI world has died (its message says why: a time limit, a rank killed, aborted or
    crashed, a lost node, the controller gone); ``wb.restart()`` gives a fresh one."""


class WorldInUse(WorkbenchError):
    """A restart or stop would end another client's work that is running on the ranks; pass
    ``force=True`` to do it anyway."""
