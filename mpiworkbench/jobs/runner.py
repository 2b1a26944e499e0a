"""On every rank of a job: the session's calls again, in order, as the engines ran them.

``job.py`` (written by the export) is a list of :meth:`Job.cell` and :meth:`Job.call` lines
ending in :meth:`Job.finish`. Each rank keeps one namespace, an IPython shell's as on an engine
(``get_ipython()`` answers there, IPython's syntax works in cells), and runs each cell with the
engines' own code for a ``%%px`` cell (:func:`mpiworkbench.client.ranks.relay.run_cell`: its
stdout, stderr and value captured) and each call with theirs for ``wb.run``
(:func:`~mpiworkbench.client.ranks.relay.call`; its function and arguments unpacked into that
namespace, as ipyparallel does). After each call a rank appends its record (its host, what it
printed, the digest, the error) to ``output/np-N/rank-R.jsonl`` and flushes it: a job cut short keeps
everything up to there.

A call that fails on a rank ends the job: that rank prints the error and calls
``MPI_Abort`` (its peers may be waiting for it in a collective; a world never hangs on a failed
rank). A ``%%px --trace`` cell is traced as in the session: the interposer records its MPI calls
(``mpiworkbench job run`` preloads it, as a workbench's engines have it), and rank 0 writes the
trace beside the output as Chrome JSON. At the end, :meth:`Job.finish` keeps the values named at
export (``values.npz``) and rank 0 compares the run with the session
(:func:`mpiworkbench.jobs.compare.report`).
"""

from __future__ import annotations

import json
import pickle
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from IPython.core.displaypub import DisplayPublisher
from ipyparallel import serialize

from mpiworkbench.client.ranks import relay
from mpiworkbench.core import mpi, objects
from mpiworkbench.jobs import compare, layout
from mpiworkbench.trace import chrome, recorder

#: Events each rank can record in a traced cell (as ``%%px --trace``).
TRACE_CAPACITY = 1_000_000


class Job:
    """The job of the directory holding *program* (``job.py``'s ``__file__``), on this rank."""

    def __init__(self, program: str | Path) -> None:
        from IPython.core.interactiveshell import InteractiveShell  # lazy: only a job's ranks run this

        self.dir = Path(program).resolve().parent
        self.meta = layout.read_meta(self.dir)
        self.calls = layout.calls_by_number(self.meta)
        self.comm = mpi.world()
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.host = socket.gethostname()
        self.shell = InteractiveShell.instance()
        # what a cell displays (display(), a rich Out) goes to the notebook, not to stdout, on an
        # engine: here it goes nowhere, so that a rank's stdout is what it was in the session
        self.shell.display_pub = _Unseen(shell=self.shell)
        # what every engine of a world has in its namespace (ipyparallel's IPEngine.init_mpi), here
        # with the job's rank and size: a %%px cell that reads them runs the same at any size
        self.shell.user_ns.update(MPI=mpi.MPI(), mpi_rank=self.rank, mpi_size=self.size)
        self.out = layout.output_dir(self.dir, self.size)
        if self.rank == 0:  # a run again at this size starts afresh
            shutil.rmtree(self.out, ignore_errors=True)
            self.out.mkdir(parents=True)
        self.comm.Barrier()
        self._records = open(self.out / layout.RANK_RECORDS.format(rank=self.rank), "a", encoding="utf-8")
        self._done, self._total = 0, len(self.calls)
        if self.rank == 0:
            session = self.meta["world"]["n"]
            print(f"mpiworkbench job: {self._total} call(s) of a {session}-rank session, on {self.size} rank(s)"
                  f" ({self.meta['world'].get('mpi', '?')})", flush=True)

    # ------------------------------------------------------------------ the calls
    def cell(self, number: int, source: str, trace: bool = False, ranks: list[int] | None = None) -> None:
        """Run ``%%px`` cell *number* (its *source* as job.py holds it) on every rank, or on
        *ranks* only (``%%px --targets``); with *trace*, record its MPI calls."""
        layout.entry(self.calls, number)
        if ranks is not None and self.rank not in ranks:
            self._record(number, {"outcome": "skipped"}, time.perf_counter())
            return
        started = time.perf_counter()
        tracing = trace and self._trace_start(number)
        reply = relay.run_cell(source)
        traced = None
        if tracing and reply[1] == "ok":
            traced = self._trace_finish(number)  # (collective: a rank whose cell failed ends the job instead)
        elif tracing:
            recorder.stop()
        stdout, stderr, result = reply[-1]
        record = {"outcome": reply[1], "stdout": stdout, "stderr": stderr, "result": result,
                  "digest": layout.digest(stdout)}
        if traced:
            record["trace"] = traced
        if reply[1] != "ok":
            record.update(error=reply[2], traceback=reply[3])
        self._record(number, record, started)

    def call(self, number: int) -> None:
        """Run call *number* (``wb.run``, a solver's step, a push): its function and arguments
        from ``data/``, as many times in a row as the session ran it."""
        found = layout.entry(self.calls, number)
        buffers = _load(self.dir / found["data"])
        started = time.perf_counter()
        record: dict[str, Any] = {"outcome": "ok"}
        for _ in range(int(found.get("repeat", 1))):
            func, args, kwargs = serialize.unpack_apply_message(buffers, g=self.shell.user_ns, copy=True)
            reply = relay.call(func, args, kwargs)
            if reply[1] != "ok":
                record = {"outcome": reply[1], "error": reply[2], "traceback": reply[3]}
                break
        self._record(number, record, started)

    def finish(self) -> int:
        """Keep the values named at export (rank 0's, in ``values.npz``), then compare the run
        with the session (rank 0 prints it); the comparison's exit code
        (:func:`mpiworkbench.jobs.compare.report`) on rank 0, 0 elsewhere."""
        values = values_here(self.meta.get("values", []), self.shell.user_ns)
        self._records.close()
        if self.rank == 0:
            np.savez(self.out / layout.VALUES, **values)
        self.comm.Barrier()
        if self.rank != 0:
            return 0
        lines, code = compare.report(self.dir, self.size)
        print("\n".join(lines), flush=True)
        return code

    # ------------------------------------------------------------------ helpers
    def _record(self, number: int, record: dict[str, Any], started: float) -> None:
        record = {"number": number, "rank": self.rank, "host": self.host,
                  "seconds": round(time.perf_counter() - started, 6), **record}
        self._records.write(json.dumps(record) + "\n")
        self._records.flush()
        self._done += 1
        label = layout.entry(self.calls, number)["label"]
        if record["outcome"] not in ("ok", "skipped"):
            print(f"mpiworkbench job: rank {self.rank}: [{number}] {label} failed: {record.get('error')}\n"
                  + "\n".join(record.get("traceback", [])), file=sys.stderr, flush=True)
            self._records.close()
            self.comm.Abort(1)  # the peers may wait for this rank in a collective: end the world
        if self.rank == 0:
            print(f"[{self._done}/{self._total}] [{number}] {label}: {record['outcome']} "
                  f"({record['seconds']:.2f} s)", flush=True)

    def _trace_start(self, number: int) -> bool:
        try:
            recorder.start(TRACE_CAPACITY, True)
        except recorder.TracingUnavailable as exc:
            if self.rank == 0:
                print(f"mpiworkbench job: [{number}] runs untraced: {exc}", file=sys.stderr, flush=True)
            return False
        return True

    def _trace_finish(self, number: int) -> str | None:
        trace = recorder.finish(self.comm)
        if trace is None:
            return None
        path = chrome.write_chrome(trace, self.out / layout.TRACE.format(number=number))
        return f"{path.name}: {trace.summary()}"


def values_here(specs: list[dict[str, Any]], namespace: dict[str, Any] | None = None) -> dict[str, Any]:
    """On every rank at once: the values *specs* name (``{"label", "kind": "name", "name"}``: a
    name of the rank's namespace; ``{"label", "kind": "object", "key", "method"}``: an engine-side
    object's method, a solver's ``gather`` — collective, every rank takes part). Rank 0's are
    returned (as NumPy arrays); the other ranks return ``{}``. What the export asks the session's
    ranks and a job's ranks end with: one function, so both take them alike."""
    if namespace is None:
        from IPython import get_ipython  # an engine's namespace

        namespace = get_ipython().user_ns
    found = {}
    for spec in specs:
        if spec["kind"] == "object":
            found[spec["label"]] = objects.call(spec["key"], spec["method"], (), {})
        elif spec["name"] in namespace:
            found[spec["label"]] = namespace[spec["name"]]
    if mpi.world().Get_rank() != 0:
        return {}
    arrays = {}
    for label, value in found.items():
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            raise ValueError(f"value {label!r} is a {type(value).__name__}, not numbers: name values that are "
                             f"numbers or NumPy arrays (a norm, a field), which a job's run can be compared by")
        arrays[label] = array
    return arrays


class _Unseen(DisplayPublisher):
    """A display publisher that shows nothing (a job has no notebook to show it in)."""

    def publish(self, data, metadata=None, *args, **kwargs) -> None:
        return None


def _load(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - the job's own data, written by its export

