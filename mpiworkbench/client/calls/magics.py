"""``%px`` / ``%%px`` that cannot freeze the notebook on a failed collective.

ipyparallel's magics wait forever for a blocking cell (its issue #435): if one rank
raises before a barrier, the others never return. These magics are ipyparallel's own,
with one change: a blocking execution waits at most ``wb.timeout`` seconds, returns a
short grace period after the first rank fails, and then reports rank by rank what
happened and how to get out (``wb.restart()``) — with the hang report: where each rank is
blocked, its Python line and the likely cause.

``%%px --trace`` records the cell's MPI calls on every rank (``wb.last_trace`` afterwards;
``mpiworkbench.plot.trace.timeline(wb.last_trace)`` draws it).

Every cell, blocking or not, reaches the engines through :meth:`~mpiworkbench.client.calls.session.Session.submit`:
it takes the MPI world's turn, so cells of several notebooks on one cluster never interleave
their collectives.
"""

from __future__ import annotations

import shlex
import sys
from contextlib import nullcontext

from IPython.display import display
from ipyparallel import error
from ipyparallel.client.magics import ParallelMagics

from mpiworkbench.client import upstream
from mpiworkbench.client.calls import relayed
from mpiworkbench.client.ranks import relay
from mpiworkbench.client.calls.debug_cell import debug_options, debugging_cell
from mpiworkbench.client.calls.journal import outcome_of
from mpiworkbench.client.errors import RankFailure
from mpiworkbench.client.calls.output import GroupedOutput, RankOutput
from mpiworkbench.client.calls.trace import tracing
from mpiworkbench.client.calls.waiting import rank_statuses

#: Up to this many ranks ``%%px`` streams output as it comes, engine by engine (ipyparallel's
#: way); beyond, it shows every rank's output grouped when the cell ends (``--stream`` streams).
STREAM_UP_TO = 8
#: Seconds a finished cell waits for its ranks' output: it travels on IOPub, apart from the
#: replies, and may arrive after them (under load, seconds after); each engine's idle status on
#: IOPub says its output is complete, and ends the wait at once.
OUTPUT_WAIT_S = 30.0
#: Seconds an interrupted ``%%px --debug`` cell, its ranks continued, may take to end by itself
#: before the engines are sent the interrupt signal (3 s was too short with three ranks on two busy
#: cores: the signal then took a continued rank out of the collective the others were in).
DEBUG_END_S = 10.0


class WorkbenchMagics(ParallelMagics):
    """ipyparallel's parallel magics with the workbench's timeout on blocking cells."""

    workbench = None  # set by activate()

    def __init__(self, shell, view, suffix=""):
        super().__init__(shell, view, suffix)
        self.magics["line"]["pxjob" + suffix] = self.pxjob

    def pxjob(self, line=""):
        """``%pxjob PATH [NAME ...] [--overwrite]``: save this session's MPI work as a batch job in
        PATH (``wb.export_job(PATH, values=[NAME, ...])``: the values runs are compared by)."""
        words = shlex.split(line)
        overwrite = "--overwrite" in words
        words = [w for w in words if w != "--overwrite"]
        export = getattr(self.workbench, "export_job", None)
        if not words or export is None:
            raise ValueError("%pxjob PATH [NAME ...] [--overwrite]: name the job's directory (and the values to "
                             "compare runs by); it needs an mpiworkbench.Workbench")
        saved = export(words[0], values=words[1:] or None, overwrite=overwrite)
        print(saved)
        return saved

    #: The path of the cell being run: None (by the world's size), ``True`` (``--broadcast``) or
    #: ``False`` (``--direct``).
    _broadcast = None
    #: The debugging session of the ``%%px --debug`` cell being run (None otherwise).
    _debugging = None
    #: Whether the cell being run is a ``%%px --trace`` cell (the journal notes it).
    _tracing = False

    def cell_px(self, line="", cell=None):
        """ipyparallel's ``%%px``, plus ``--debug [RANKS] [--break LINES]``: stop the ranks at
        the cell's first statement (or LINES) for JupyterLab's debugger (:mod:`~mpiworkbench.client.calls.debugging`); ``--trace``: record the cell's MPI calls (``wb.last_trace``);
        ``--broadcast`` / ``--direct``: send the cell as one message, to rank 0, which hands it
        to the other ranks (:mod:`~mpiworkbench.client.ranks.relay`; the default above
        :data:`STREAM_UP_TO` ranks), or engine by engine (ipyparallel's way)."""
        line, debug = debug_options(line)  # %%px --debug [RANKS] [--break LINES]
        if debug is not None:
            with debugging_cell(self.workbench, cell, *debug) as self._debugging:
                try:
                    return self.cell_px(line, cell)
                finally:
                    self._debugging = None
        words = line.split()
        self._broadcast = True if "--broadcast" in words else False if "--direct" in words else None
        try:
            return self._cell_px([w for w in words if w not in ("--broadcast", "--direct")], cell)
        finally:
            self._broadcast = None  # (%px lines take the default)

    def _cell_px(self, words, cell):
        if "--trace" not in words:
            return super().cell_px(" ".join(words), cell)
        line = " ".join(w for w in words if w != "--trace")
        wb = self.workbench
        recording = tracing(wb)
        self._tracing = True
        try:
            with recording:
                result = super().cell_px(line, cell)
        finally:
            self._tracing = False
            wb.last_trace = recording.trace
            if recording.trace is not None:
                print(f"trace: {recording.trace.summary()} (wb.last_trace)")
        return result

    cell_px.parser = ParallelMagics.cell_px.parser  # ipyparallel parses the rest of the line with it

    def parallel_execute(
        self,
        cell,
        block=None,
        groupby="type",
        save_name=None,
        stream_output=None,
        progress_after=None,
        signal_on_interrupt=None,
    ):
        block = self.view.block if block is None else block
        targets = self._engines(self.view.targets)
        if stream_output is None:  # at many ranks, output streamed engine by engine is a flood: group it
            stream_output = self.stream_output and len(targets) <= STREAM_UP_TO
        signal_on_interrupt = self.signal_on_interrupt if signal_on_interrupt is None else signal_on_interrupt
        wb = self.workbench
        first = next((line.strip() for line in cell.splitlines() if line.strip()), "")
        label = f"{wb.activity or '%%px'}: {first[:60]}"
        # kept in the session's journal (what wb.export_job saves), with its outcome and output
        everyone = sorted(targets) == sorted(wb.ranks)
        kept = Kept(wb.calls.journal, wb.calls.journal.cell(
            cell, wb.calls.world(), trace=self._tracing,
            ranks=None if everyone else sorted(wb.ranks.get(e, e) for e in targets)))
        with kept:
            broadcast_fits = block and not stream_output and list(targets) == list(wb.view.targets)
            if broadcast_fits and (self._broadcast or (self._broadcast is None and len(targets) > STREAM_UP_TO)):
                return self._broadcast_cell(cell, label, save_name, signal_on_interrupt, kept)
            call = wb.submit(label, lambda: self.view.execute(cell, silent=False, block=False), keep=True)
            call.announces_start = True
            result = call.ar  # ipyparallel's, as %px gives it (%pxresult, --save-name)
            upstream.name_call(result, "%px")
            self.last_result = result
            if save_name:
                self.shell.user_ns[save_name] = result
            if not block:
                kept.outcome = "not waited"
                return result
            try:
                with upstream.stream_output(result) if stream_output else nullcontext():
                    statuses = self._wait(call)
                    if stream_output and result.ready():
                        # streamed only while this block runs: the output that trails the replies too
                        result.wait_for_output(OUTPUT_WAIT_S)
                    if stream_output:  # the tracebacks were streamed: ipyparallel's short note
                        try:
                            result.get()
                        except error.CompositeError as exc:
                            if upstream.output_streamed(result):
                                raise error.AlreadyDisplayedError(exc) from None
                            raise
                    elif any(s.state == "failed" for s in statuses):
                        raise RankFailure(statuses)  # each error type once, with its ranks
            except KeyboardInterrupt:
                kept.outcome = "interrupted"
                self._signal(signal_on_interrupt, targets)
            finally:
                if not stream_output:
                    # after a timeout only some ranks have output to show: show theirs
                    wb.last_output = show_grouped(result, wb.ranks)
                kept.printed = printed_by_rank(result, wb.ranks)

    def _broadcast_cell(self, cell, label, save_name, signal_on_interrupt, kept):
        """Run the cell as one message with one reply (relayed by rank 0; the ranks' output comes
        in it: :func:`~mpiworkbench.client.ranks.relay.run_cell`), show it grouped, raise the ranks'
        errors grouped. A timeout reports every rank that published no failure as still running."""
        wb = self.workbench
        call = wb.submit(label, lambda view: view.apply_async(relay.fan_out, relay.run_cell, cell),
                         keep=True, relayed=True)
        ar = call.ar
        if save_name:
            self.shell.user_ns[save_name] = ar
        try:
            statuses = self._wait(call)
            if any(s.state == "failed" for s in statuses):
                raise RankFailure(statuses)
        except KeyboardInterrupt:
            kept.outcome = "interrupted"
            self._signal(signal_on_interrupt, self.view.targets)
        finally:
            if ar.ready():
                wb.last_output = GroupedOutput(relayed.outputs(ar, wb.ranks))
                kept.printed = {o.rank: o.stdout for o in wb.last_output.outputs}
                text = wb.last_output.text(errors=False)
                if text:
                    print(text)
        return None

    def _wait(self, call):
        """Wait for the cell's *call* (hang-protected). Interrupted in a ``%%px --debug`` cell,
        every rank is first continued (its breakpoints cleared): a cell stopped at a breakpoint,
        its peers waiting for it in a collective, then ends by itself within :data:`DEBUG_END_S`
        (its output shown as it comes), and the world is left whole. Otherwise the interrupt goes
        on to :meth:`_signal`; a call still running after it is judged by the next call
        (:mod:`~mpiworkbench.client.calls.left`)."""
        wb = self.workbench
        try:
            return wb.wait_explained(call, wb.timeout, raise_failures=False)
        except KeyboardInterrupt:
            if self._debugging is None:
                raise
            try:
                self._debugging.close()
            except Exception as exc:  # noqa: BLE001 - the signal is the way out then
                print(f"interrupted: continuing the ranks failed ({exc})", file=sys.stderr)
            if not call.wait(DEBUG_END_S):
                raise
            print("interrupted: every rank was continued, and the cell ran to its end", file=sys.stderr)
            return wb.wait_explained(call, wb.timeout, raise_failures=False)

    def _signal(self, signal_on_interrupt, targets) -> None:
        """ipyparallel's way with an interrupted cell: *signal_on_interrupt* to its engines
        (re-raised without one)."""
        if signal_on_interrupt is None:
            raise KeyboardInterrupt
        print(f"Received Keyboard Interrupt. Sending signal {signal_on_interrupt} to engines...", file=sys.stderr)
        self.view.client.send_signal(signal_on_interrupt, targets=targets, block=True)

    def _engines(self, targets) -> list:
        return upstream.engine_ids(self.view.client, targets)


def show_grouped(result, rank_of) -> GroupedOutput:
    """Print the finished ranks' output of *result* grouped (:mod:`~mpiworkbench.client.calls.output`;
    errors are left to the :class:`RankFailure` raised) and republish their rich outputs rank by
    rank; returns the :class:`GroupedOutput` (``wb.last_output``)."""
    outputs, rich = [], []
    parts = result.split()
    for engine, part in zip(upstream.targets(result), parts):
        if not part.ready():
            continue
        part.wait_for_output(OUTPUT_WAIT_S)
        rank = rank_of.get(engine, engine)
        found = part.execute_result
        data = (found or {}).get("data") or {}
        plain = set(data) <= {"text/plain"}
        outputs.append(RankOutput(rank, part.stdout or "", part.stderr or "", data.get("text/plain", "") if plain else "",
                                  rank_statuses(part, rank_of)[0] if part.exception() is not None else None))
        if part.outputs or not plain:
            rich.append((rank, part, not plain))
    grouped = GroupedOutput(outputs)
    text = grouped.text(errors=False)
    if text:
        print(text)
    for rank, part, result_too in rich:
        print(f"[output:{rank}]")
        for output in part.outputs:
            upstream.republish(part, output)
        if result_too:
            display(part.get())
    return grouped


def activate(wb):
    """Register ``%px``, ``%%px``, ``%pxresult``, ``%pxconfig``, ``%autopx`` on *wb*'s view."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None:
        return None
    magics = WorkbenchMagics(shell, wb.view, "")
    magics.workbench = wb
    shell.magics_manager.register(magics)
    return magics


class Kept:
    """``with Kept(journal, entry):`` — a cell's journal entry ended when the block ends: with the
    outcome the block set (``interrupted``, ``not waited``) or the exception it raised, and the
    ranks' printed text it set (:attr:`printed`)."""

    def __init__(self, journal, entry) -> None:
        self.journal, self.entry = journal, entry
        self.outcome, self.printed = "ok", {}

    def __enter__(self) -> "Kept":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        outcome = outcome_of(exc) if exc is not None else self.outcome
        self.journal.ended(self.entry, outcome, f"{exc_type.__name__}: {exc}" if exc is not None else "", self.printed)


def printed_by_rank(result, rank_of) -> dict[int, str]:
    """What each rank of an engine-by-engine cell printed (its stdout), for the ranks that have
    finished."""
    printed = {}
    for engine, part in zip(upstream.targets(result), result.split()):
        if part.ready():
            printed[rank_of.get(engine, engine)] = part.stdout or ""
    return printed

