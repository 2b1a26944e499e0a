"""What a session's ranks ran, in order: the journal a job is saved from (``wb.export_job``).

Every ``%%px`` cell and every function the session runs on every rank (``wb.run``, a solver
handle's steps and frames, a push, a benchmark's or a lesson's driver) is kept with its
outcome: the cell's source and a digest of what each rank printed, the function and its arguments as
ipyparallel packs them for the engines. Calls that only look (a rank's facts, the trace's own
start and gathering, an object's attribute) are not kept: :data:`LOOKS`.

Bounded, for worlds kept for hours: the same call run again and again with the same arguments (a
panel's Play: a step and a picture a frame) is one entry with a count, a cell keeps the digest of
what each rank printed (not the text), and the calls' data are kept up to
:data:`KEEP_BYTES` in all; past that a call is kept as ``not kept`` (the export lists it, the job
cannot run it). Each entry names the engine set it ran on: a restarted world starts afresh, and
the export takes only the calls of the world that runs now.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from mpiworkbench.client.calls.output import printed_digest

#: Functions whose calls only look at the ranks, or serve the notebook's own tools (the trace's
#: start and gathering, a rank's kernel opened for debugging): not kept (``module:name``).
LOOKS = frozenset({
    "mpiworkbench.core.machine:rank_info", "mpiworkbench.backends.registry:environment",
    "mpiworkbench.core.objects:attribute", "mpiworkbench.client.ranks.arrays:collect_rows",
    "mpiworkbench.trace.recorder:start", "mpiworkbench.trace.recorder:finish_world",
    "mpiworkbench.client.ranks.kernel:open_kernel",
})
#: Bytes of calls' functions and arguments the journal keeps in all.
KEEP_BYTES = 256 * 2**20
#: Entries the journal keeps; past that the oldest are dropped (counted: the export says so).
KEEP_ENTRIES = 20_000


@dataclass(eq=False)
class Entry:
    """One call on the ranks, as the session made it."""

    kind: str  # "cell" or "call"
    label: str
    world: int  # the engine set it ran on (``id`` of the session's view)
    source: str = ""  # a cell's code
    trace: bool = False  # a %%px --trace cell
    ranks: list[int] | None = None  # the ranks a cell ran on, when not all
    function: str = ""  # a call's function, ``module:name``
    payload: list[bytes] | None = None  # a call's function and arguments, packed
    outcome: str = "running"
    error: str = ""
    digests: dict[int, str] = field(default_factory=dict)
    repeat: int = 1
    started: float = field(default_factory=time.time)
    seconds: float = 0.0


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _arguments(args: tuple, kwargs: dict) -> str:
    return ", ".join([*map(_short, args), *(f"{k}={_short(v)}" for k, v in kwargs.items())])


def function_name(func: Any) -> str:
    """``module:qualname`` of *func* (what :data:`LOOKS` names)."""
    return f"{getattr(func, '__module__', '?')}:{getattr(func, '__qualname__', getattr(func, '__name__', '?'))}"


class Journal:
    """The calls of one session, in the order they ran (thread-safe: a panel's Play thread and
    the notebook's cells both run calls)."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        #: Engine-side objects' keys → what they are (``WaveSolver``), for the calls' labels.
        self._objects: dict[str, str] = {}
        self.dropped = 0
        self._kept_bytes = 0
        self._lock = threading.Lock()
        self._paused = threading.local()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Calls made by this thread inside the block are not kept (the export's own reads)."""
        before = getattr(self._paused, "on", False)
        self._paused.on = True
        try:
            yield
        finally:
            self._paused.on = before

    def _keeping(self) -> bool:
        return not getattr(self._paused, "on", False)

    def cell(self, source: str, world: int, trace: bool = False, ranks: list[int] | None = None) -> Entry | None:
        """A ``%%px`` cell sent to the ranks."""
        if not self._keeping():
            return None
        first = next((line.strip() for line in source.splitlines() if line.strip()), "")
        label = f"%%px{' --trace' if trace else ''}: {first[:60]}"
        return self._add(Entry("cell", label, world, source=source, trace=trace, ranks=ranks))

    def describe(self, func: Any, args: tuple, kwargs: dict) -> str:
        """What a call does, in a line: ``WaveSolver.step(3)`` for an engine-side object's method,
        ``scaled(3)`` for a function."""
        name = function_name(func)
        if name == "mpiworkbench.core.objects:create" and len(args) >= 4:
            self._objects[args[0]] = args[1].rsplit(":", 1)[-1].rsplit(".", 1)[-1]
            return f"{self._objects[args[0]]}({_arguments(tuple(args[2]), dict(args[3]))})"
        what = self._objects.get(args[0], "object") if args and isinstance(args[0], str) else "object"
        if name == "mpiworkbench.core.objects:call" and len(args) >= 4:
            return f"{what}.{args[1]}({_arguments(tuple(args[2]), dict(args[3]))})"
        if name == "mpiworkbench.core.objects:call_many" and len(args) >= 2:
            return "; ".join(f"{what}.{method}({_arguments(tuple(margs), {})})" for method, margs in args[1])
        if name == "mpiworkbench.core.objects:delete" and args:
            return f"del {what}"
        return f"{getattr(func, '__name__', 'a function')}({_arguments(args, kwargs)})"

    def call(self, func: Any, args: tuple, kwargs: dict, label: str, world: int) -> Entry | None:
        """A function sent to every rank (packed now, as ipyparallel packs it for the engines);
        *label* says who sent it (``wb.run``, ``wave``)."""
        name = function_name(func)
        if not self._keeping() or name in LOOKS:
            return None
        label = f"{label.split(':', 1)[0]}: {self.describe(func, args, kwargs)}"
        from ipyparallel import serialize  # (the client has it; imported with the session)

        large = sum(int(getattr(a, "nbytes", 0) or 0) for a in (*args, *kwargs.values()))
        if self._kept_bytes + large > KEEP_BYTES:  # (not packed at all: a copy of a huge array would cost as much)
            return self._add(Entry("call", label, world, function=name, outcome="not kept",
                                   error=f"its data ({large} bytes) is past the journal's {KEEP_BYTES // 2**20} MB"))
        try:
            payload = [bytes(b) for b in serialize.pack_apply_message(func, args, kwargs)]
        except Exception as exc:  # noqa: BLE001 - ipyparallel will say it again when it sends
            entry = Entry("call", label, world, function=name, outcome="not kept", error=f"cannot be packed: {exc}")
            return self._add(entry)
        size = sum(len(b) for b in payload)
        entry = Entry("call", label, world, function=name, payload=payload)
        with self._lock:
            if self._kept_bytes + size > KEEP_BYTES:
                entry.payload, entry.outcome = None, "not kept"
                entry.error = f"its data ({size} bytes) is past the journal's {KEEP_BYTES // 2**20} MB"
            else:
                self._kept_bytes += size
        return self._add(entry)

    def _add(self, entry: Entry) -> Entry:
        with self._lock:
            self.entries.append(entry)
            while len(self.entries) > KEEP_ENTRIES:
                self._forget(self.entries.pop(0))
                self.dropped += 1
        return entry

    def _forget(self, entry: Entry) -> None:
        if entry.payload is not None:
            self._kept_bytes -= sum(len(b) for b in entry.payload)
            entry.payload = None

    def ended(self, entry: Entry | None, outcome: str, error: str = "",
              printed: dict[int, str] | None = None) -> None:
        """*entry* has ended with *outcome* (``ok``, ``failed``, ``timeout``, ``interrupted``, ``not waited``); a cell's
        *printed* text, rank by rank. A call ended ``ok`` that repeats the one before it (same
        function and arguments, ``ok`` too) counts in that one."""
        if entry is None:
            return
        with self._lock:
            if entry.outcome == "running":
                entry.outcome = outcome
            entry.error = entry.error or error
            entry.seconds = time.time() - entry.started
            for rank, text in (printed or {}).items():
                entry.digests[rank] = printed_digest(text)
            self._merge(entry)

    def _merge(self, entry: Entry) -> None:
        index = next((i for i, e in enumerate(self.entries) if e is entry), None)
        if entry.kind != "call" or entry.outcome != "ok" or index is None:
            return
        before = self.entries[index - 1] if index else None
        if (before is not None and before.kind == "call" and before.outcome == "ok" and before.world == entry.world
                and before.payload == entry.payload):
            before.repeat += entry.repeat
            self.entries.pop(index)
            self._forget(entry)

    def of_world(self, world: int) -> list[Entry]:
        """The entries of engine set *world*, in order (a copy)."""
        with self._lock:
            return [e for e in self.entries if e.world == world]


def outcome_of(exc: BaseException | None) -> str:
    """The outcome a call that raised *exc* (or none) ended with."""
    from mpiworkbench.client.errors import ExecutionTimeout  # (light: no ipyparallel)

    if exc is None:
        return "ok"
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, ExecutionTimeout):
        return "timeout"
    return "failed"
