"""A world that lives as long as its user: one 2-rank MPI world, three notebooks on it, for half an hour.

Run on demand (not part of ``make bench``; the cluster tier runs a short form of it,
``tests/cluster/test_soak.py``)::

    .venv/bin/python benchmarks/soak.py [--minutes 30] [--interval 60] [--restart-every 10]
        [--idle 3] [--idle-every 15] [--settle 5] [--burst 50] [--pause 10] [--restarter 2]
        [--restart-while-playing] [--json FILE] [--workdir DIR]

Three client processes act as three notebooks on one world, in a private IPython directory:

* **client 2** (*cells*) starts the world (``Workbench(n=2)``, profile ``default``, a fresh
  cluster id) and runs cells on it: ``wb.run`` collectives whose results it checks, ``%%px``
  cells through IPython's own magics (a headless ``InteractiveShell``) read back with
  ``wb.pull``, a small speedup sweep (the speedup panel's **Run**) and a short trace
  (``with wb.trace(): …``); it restarts the world every ``--restart-every`` minutes;
* **client 0** attaches (``Workbench.attach(profile="default", cluster_id=…)``) and plays a
  wave panel (33³), **client 1** attaches and plays a CG panel (257²): the panels' own Play
  loop (:meth:`mpiworkbench.widgets.live.LivePanel.play_frames`, what the button runs).

Every client is active for ``--burst`` seconds, then thinks for ``--pause`` seconds, in step
with the others; restarts fall in a pause (a polite restart waits until the world is free:
another notebook's Play would otherwise refuse it with ``WorldInUse``). The clients that did
not restart learn of it on their next call (``WorldRestarted``: counted as *restart
followed*, not as a failure) and build their solvers and panels again. Every client is idle
for ``--idle`` minutes in every ``--idle-every`` (e.g. minutes 6–9 and 21–24 of 30).

Every ``--interval`` seconds this process (which only watches) samples the RSS and open
file descriptors of each client, of the controller (its processes summed), of each rank
(engine) and of the launch processes (``mpiexec``, its proxy, the engines' nannies, the
watchdog), the bytes of the world's files in ``/dev/shm``, and the calls, frames, failures
and restarts the clients report (a small JSON file each). It prints a markdown row per
sample, then the verdict:

* deaths (a client, the controller or the MPI world ending unplanned): 0;
* failed calls (errors other than ``WorldRestarted``, and wrong results): 0;
* every restart planned was done and followed by the other clients;
* every process's RSS after minute ``--settle`` at most 10 % (or 50 MB, the larger) above its
  value then (a rank replaced by a restart is compared as its role; it starts small again,
  so only growth counts);
* after the final stop: no process of the soak left, and none of the world's files left in
  ``/dev/shm`` (files other MPI jobs on the machine left meanwhile are listed apart).

The exit code is 0 only if all of these hold. ``--json FILE`` writes every sample and the
verdict.

Two variants take the paths a polite schedule avoids: ``--restarter 0`` has an attached
notebook restart the world (through the cluster's launchers, as recorded in its cluster file),
and ``--restart-while-playing`` restarts at the due minute, while the others' panels play (the
restart still waits for a moment when no call of theirs runs), so that their next calls meet
a restart in progress.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from mpiworkbench.client.cluster import controller
from mpiworkbench.core.processes import Identity, cmdline, end

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# ---------------------------------------------------------------------------- parameters
#: Defaults of the command line (the issue's soak).
MINUTES, INTERVAL_S, RESTART_EVERY_MIN, IDLE_MIN, IDLE_EVERY_MIN, SETTLE_MIN = 30.0, 60.0, 10.0, 3.0, 15.0, 5.0
#: Seconds every client is active, then thinks, in step with the others.
BURST_S, PAUSE_S = 50.0, 10.0
#: MPI ranks of the world.
RANKS = 2
#: The notebooks: client index → what it does. The cells notebook starts (owns) the world.
ROLES = ("wave", "cg", "cells")
OWNER = ROLES.index("cells")
#: The panels' meshes: the wave's points per axis (3-D) and the CG's (2-D).
WAVE_MESH, CG_MESH = 33, 257
#: Seconds a cells notebook thinks between two cells; the seed and range of the values its
#: collectives work on (their results are checked).
CELL_PAUSE_S, CELLS_SEED, CELL_VALUES = 0.1, 35, 1000
#: The cells notebook runs a speedup sweep at the start of every this many bursts, and a trace
#: at the start of the bursts in between (offset by one).
SWEEP_EVERY, TRACE_EVERY = 3, 3
#: The speedup sweep: the ``inner`` experiment, as small as the panel allows.
SWEEP_SIZE, SWEEP_LOOPS, SWEEP_REPEATS = 4096, 3, 2
#: Seconds an execution may take before the workbench reports it as hung (the session's timeout).
CALL_TIMEOUT_S = 120.0
#: Seconds a restart keeps retrying while another notebook's work holds the world (WorldInUse).
RESTART_PATIENCE_S = 60.0
#: Seconds between two retries of a refused restart.
RESTART_RETRY_S = 0.05
#: Seconds a client waits after a failed call before it goes on (no tight loop of failures).
FAILURE_BACKOFF_S = 1.0
#: Seconds between two writes of a client's counters, and two looks of the watcher at the processes.
STATUS_EVERY_S, WATCH_EVERY_S = 1.0, 1.0
#: Seconds between the world being up and the schedule's start (the others attach meanwhile).
ATTACH_LEAD_S = 10.0
#: Seconds to wait for: the owner's world to start, the clients to end after the schedule, and
#: the processes of the stopped world to be gone.
START_LIMIT_S, END_LIMIT_S, GONE_LIMIT_S = 180.0, 300.0, 60.0
#: The memory bound: a process's RSS may drift from its value at minute ``--settle`` by this
#: fraction of it, or by this many MB, whichever is larger.
RSS_DRIFT_FRACTION, RSS_DRIFT_FLOOR_MB = 0.10, 50.0
#: Seconds the last world or controller may be gone before the final stop began (the watcher
#: looks every WATCH_EVERY_S) and still count as ended by it.
GONE_MARGIN_S = 3 * WATCH_EVERY_S
#: Error messages a client keeps (the first and the last ones), and their length at most.
ERRORS_KEPT, ERROR_CHARS = 5, 400
#: Seconds without a whole MPI world after which the table counts a death (a restart takes a few).
WORLD_ABSENT_S = 30.0
MB = 1024 * 1024


# ------------------------------------------------------------------------------ schedule
@dataclass
class Schedule:
    """When the clients are active, idle and restart: seconds from the start, the same in every
    process (all times here are relative to the schedule's start)."""

    minutes: float = MINUTES
    burst: float = BURST_S
    pause: float = PAUSE_S
    idle: float = IDLE_MIN
    idle_every: float = IDLE_EVERY_MIN
    restart_every: float = RESTART_EVERY_MIN
    #: Restart in a pause (the others think); otherwise at the due time, while they play.
    restart_in_pause: bool = True

    @property
    def total(self) -> float:
        return self.minutes * 60.0

    @property
    def period(self) -> float:
        return self.burst + self.pause

    def idle_windows(self) -> list[tuple[float, float]]:
        """The idle gaps: ``idle`` minutes centred in every ``idle_every`` minutes, each ending a
        minute before the end at the latest; one in the middle of a run too short for that."""
        if self.idle <= 0:
            return []
        length, every, latest = self.idle * 60, self.idle_every * 60, self.total - 60
        windows, k = [], 0
        while (k + 0.5) * every + length / 2 <= latest:
            centre = (k + 0.5) * every
            windows.append((centre - length / 2, centre + length / 2))
            k += 1
        if not windows and length < self.total:
            windows.append((self.total / 2 - length / 2, self.total / 2 + length / 2))
        return windows

    def idle_at(self, t: float) -> bool:
        return any(start <= t < end for start, end in self.idle_windows())

    def active(self, t: float) -> bool:
        """Whether the clients work at *t* (in a burst, outside the idle gaps, before the end)."""
        return 0 <= t < self.total and t % self.period < self.burst and not self.idle_at(t)

    def burst_end(self, t: float) -> float:
        """When the activity going on at *t* ends (the burst's end, an idle gap or the end)."""
        ends = [t - t % self.period + self.burst, self.total]
        ends += [start for start, _end in self.idle_windows() if start > t]
        return min(ends)

    def next_active(self, t: float) -> float | None:
        """The first moment at or after *t* when the clients work; ``None`` when none is left."""
        bursts = range(int(t // self.period) + 1, int(self.total // self.period) + 1)
        candidates = [t, *(k * self.period for k in bursts), *(end for _start, end in self.idle_windows() if end >= t)]
        found = [c for c in sorted(candidates) if c >= t and self.active(c)]
        return found[0] if found else None

    def restarts(self) -> list[float]:
        """When the world is restarted: every ``restart_every`` minutes, at the first pause
        then (or at once, unless :attr:`restart_in_pause`) outside the idle gaps, when some work
        follows before the end."""
        if self.restart_every <= 0:
            return []
        times, due, step = [], self.restart_every * 60, self.restart_every * 60
        while due < self.total:
            if self.restart_in_pause:
                at = math.ceil((due - self.burst) / self.period) * self.period + self.burst
                while any(start < at + self.pause and at < end for start, end in self.idle_windows()):
                    at += self.period
            else:
                at = due
                while self.idle_at(at):
                    at = next(end for start, end in self.idle_windows() if start <= at < end)
            resumes = self.next_active(at)
            if resumes is None:
                break
            times.append(at)
            due = max(due + step, at + self.pause)
        return times


# ------------------------------------------------------------------------------ a client
@dataclass
class Counters:
    """What a client did, written to its status file for the driver."""

    client: int
    role: str
    pid: int = field(default_factory=os.getpid)
    phase: str = "starting"
    cluster_id: str = ""
    n: int = 0
    calls: int = 0
    failed: int = 0
    frames: int = 0
    runs: int = 0
    cells: int = 0
    sweeps: int = 0
    traces: int = 0
    restarts_done: int = 0
    restarts_followed: int = 0
    restart_refusals: int = 0
    stopping_at: float = 0.0
    stopped_at: float = 0.0
    #: The first failures (the cause, often) and the last ones, each with its time.
    first_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def fail(self, what: str, exc: BaseException | str) -> None:
        self.failed += 1
        text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        said = f"{time.strftime('%H:%M:%S')} {what}: {' / '.join(text.splitlines())[:ERROR_CHARS]}"
        if len(self.first_errors) < ERRORS_KEPT:
            self.first_errors.append(said)
        self.errors = (self.errors + [said])[-ERRORS_KEPT:]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write *data* to *path* whole (readers never see half a file)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def status_path(workdir: Path, client: int) -> Path:
    return workdir / f"client-{client}.json"


def allreduce_check(x: int):
    """A collective whose result the caller checks: ``sum(x + rank)`` on every rank."""
    from mpi4py import MPI

    return MPI.COMM_WORLD.allreduce(x + MPI.COMM_WORLD.rank)


def allgather_check(x: int):
    """Every rank's ``x * (rank + 1)``, on every rank."""
    from mpi4py import MPI

    return MPI.COMM_WORLD.allgather(x * (MPI.COMM_WORLD.rank + 1))


def ring_exchange(x: int):
    """A message around the ring of ranks (what the trace records)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    return comm.sendrecv(x + comm.rank, dest=(comm.rank + 1) % comm.size, source=(comm.rank - 1) % comm.size)


#: A ``%%px`` cell: its result is read back with ``wb.pull`` and checked.
PX_CELL = "from mpi4py import MPI\n_soak = MPI.COMM_WORLD.allreduce({x} * (MPI.COMM_WORLD.rank + 1))\n"


class Notebook:
    """One client's activity: build what it works on, work for a burst, restart when due.

    Subclasses set :meth:`build` (solvers and panels: again after every restart) and
    :meth:`work` (a burst until a deadline). Every error other than ``WorldRestarted`` is a
    failed call."""

    def __init__(self, wb, counters: Counters, schedule: Schedule, t0: float, restarter: bool, shell=None):
        self.wb, self.counters, self.schedule, self.t0 = wb, counters, schedule, t0
        self.restarter, self.shell = restarter, shell
        self._built = False

    def now(self) -> float:
        return time.time() - self.t0

    def build(self) -> None:
        """Create what the notebook works on (on the current world)."""

    def work(self, end: float) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Free what :meth:`build` made on the ranks (the end of the notebook)."""

    def guarded(self, what: str, action: Callable[[], Any]) -> None:
        """Run *action*; a restart by someone else is followed, any other error counted."""
        from mpiworkbench.client.errors import WorldRestarted

        try:
            action()
        except WorldRestarted:
            self.counters.restarts_followed += 1
            self._built = False  # everything on the ranks is gone: build it again
        except Exception as exc:  # noqa: BLE001 - counted and shown in the verdict
            self.counters.fail(what, exc)
            self._built = False
            time.sleep(FAILURE_BACKOFF_S)

    def run(self) -> None:
        """Follow the schedule until its end."""
        restarts = list(self.schedule.restarts()) if self.restarter else []
        while self.now() < self.schedule.total:
            t = self.now()
            if restarts and t >= restarts[0]:
                restarts.pop(0)
                self.guarded("restart", self.restart_world)
                continue
            if self.schedule.active(t):
                self.counters.phase = "active"
                end = min([self.schedule.burst_end(t), *restarts[:1]])  # a restart due cuts the burst

                def burst():
                    if not self._built:
                        self.build()
                        self._built = True
                    self.work(end)

                self.guarded(self.counters.role, burst)
                continue
            self.counters.phase = "idle" if self.schedule.idle_at(t) else "pause"
            wake = [w for w in (self.schedule.next_active(t), restarts[0] if restarts else None) if w is not None]
            time.sleep(max(0.0, min([*wake, self.schedule.total]) - self.now()))

    def restart_world(self) -> None:
        """A polite restart: retried while another notebook's work holds the world."""
        from mpiworkbench.client.errors import WorldInUse

        give_up = time.monotonic() + RESTART_PATIENCE_S
        self.counters.calls += 1
        while True:
            try:
                self.wb.restart()
                break
            except WorldInUse:
                self.counters.restart_refusals += 1
                if time.monotonic() > give_up:
                    raise
                time.sleep(RESTART_RETRY_S)
        self.counters.restarts_done += 1
        self._built = False  # our own objects went with the old ranks


class PanelNotebook(Notebook):
    """A notebook playing a live solver panel in bursts (``Play`` pressed, then released)."""

    def make_handle(self):
        raise NotImplementedError

    panel = None

    def build(self) -> None:
        self.counters.calls += 1
        if self.panel is not None:  # the one of the world before the restart: its widgets go
            self.panel.close()
        self.handle = self.make_handle()
        self.panel = self.handle.panel(self.handle)

    def work(self, end: float) -> None:
        stats, counters = self.panel.stats, self.counters
        drawn, frames, calls = stats.count, counters.frames, counters.calls

        def count() -> None:  # the frames drawn so far are calls made
            counters.frames = frames + stats.count - drawn
            counters.calls = calls + stats.count - drawn

        def should_stop() -> bool:  # asked by Play after every frame
            count()
            return self.now() >= end

        try:
            while self.now() < end:
                if getattr(self.handle, "finished", False):  # a CG at machine precision: start again
                    calls += 1
                    self.handle.reset()
                self.panel.play_frames(should_stop)
        finally:
            count()

    def close(self) -> None:
        if self.panel is not None:
            self.panel.close()
        if self._built:
            self.guarded("close", self.handle.close)


class WaveNotebook(PanelNotebook):
    """The wave panel's notebook."""

    def make_handle(self):
        return self.wb.wave(mesh=WAVE_MESH)


class CGNotebook(PanelNotebook):
    """The CG panel's notebook."""

    def make_handle(self):  # an unreachable tolerance: it iterates on at machine precision
        return self.wb.cg(mesh=CG_MESH, tol=1e-300, maxiter=10**7)


class CellsNotebook(Notebook):
    """Cells: ``wb.run`` collectives, ``%%px`` cells, a speedup sweep and a trace now and then."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.bursts = 0
        self.sweep_panel = None
        self.rng = random.Random(CELLS_SEED)

    def build(self) -> None:
        if self.sweep_panel is None:  # the panel holds nothing on the ranks: built once
            self.sweep_panel = self.wb.speedup("inner")
            self.sweep_panel.sizes.value = str(SWEEP_SIZE)
            self.sweep_panel.param_widgets["loops"].value = SWEEP_LOOPS
            self.sweep_panel.repeats.value = SWEEP_REPEATS
            self.sweep_panel.variants.value = ("numpy",)

    def check(self, what: str, got: Any, wanted: Any) -> None:
        if got != wanted:
            self.counters.fail(what, f"wrong result {got!r}, expected {wanted!r}")

    def work(self, end: float) -> None:
        n = self.wb.n
        if self.bursts % SWEEP_EVERY == 0:
            self.sweep()
        elif self.bursts % TRACE_EVERY == 1:
            self.trace()
        self.bursts += 1
        i = 0
        while self.now() < end:
            x = self.rng.randrange(CELL_VALUES)
            self.counters.calls += 1
            if i % 3 == 0:
                self.counters.runs += 1
                self.check("wb.run allreduce", self.wb.run(allreduce_check, x), [n * x + n * (n - 1) // 2] * n)
            elif i % 3 == 1:
                self.counters.runs += 1
                self.check("wb.run allgather", self.wb.run(allgather_check, x), [[x * (r + 1) for r in range(n)]] * n)
            else:
                self.counters.cells += 1
                self.shell.run_cell_magic("px", "", PX_CELL.format(x=x))
                self.counters.calls += 1
                self.check("%%px + wb.pull", self.wb.pull("_soak", rank=n - 1), x * n * (n + 1) // 2)
            i += 1
            time.sleep(CELL_PAUSE_S)

    def sweep(self) -> None:
        """The speedup panel's Run (blocking): a point per rank count, each verified."""
        self.counters.calls += 1
        result = self.sweep_panel.run()
        self.counters.sweeps += 1
        points = result.points if result is not None else []
        self.check("speedup sweep points", len(points), self.wb.n)
        bad = [p.get("nranks") for p in points if not (p.get("verify") or {}).get("ok", False)]
        self.check("speedup sweep verified", bad, [])

    def trace(self) -> None:
        """``with wb.trace(): …`` around a ring exchange; the trace must hold its messages."""
        self.counters.calls += 1
        with self.wb.trace() as recording:
            got = self.wb.run(ring_exchange, 5)
        self.counters.traces += 1
        n = self.wb.n
        self.check("traced ring", got, [5 + (r - 1) % n for r in range(n)])
        events = len(recording.trace) if recording.trace is not None else 0
        if events == 0:
            self.counters.fail("trace", "the trace recorded no events")


NOTEBOOKS = {"wave": WaveNotebook, "cg": CGNotebook, "cells": CellsNotebook}


def client_main(client: int, workdir: Path) -> int:
    """What ``soak.py --client K --workdir DIR`` runs: one notebook, on the schedule of the
    driver's ``soak.json``; its counters go to ``client-K.json`` every second."""
    params = read_json(workdir / "soak.json")
    role = ROLES[client]
    counters = Counters(client, role)
    path = status_path(workdir, client)
    done = threading.Event()

    def report() -> None:
        while not done.wait(STATUS_EVERY_S):
            write_json(path, asdict(counters))

    def terminated(_signum, _frame):
        raise SystemExit(f"client {client} terminated")

    signal.signal(signal.SIGTERM, terminated)
    write_json(path, asdict(counters))
    reporter = threading.Thread(target=report, name="soak-status", daemon=True)
    reporter.start()
    wb = None
    try:
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance() if role == "cells" else None  # %%px lives on a shell
        from mpiworkbench import Workbench

        if client == OWNER:
            wb = Workbench(n=params["ranks"], timeout=CALL_TIMEOUT_S).start()
            counters.cluster_id, counters.n, counters.phase = wb.cluster_id, wb.n, "world started"
            write_json(path, asdict(counters))
            start = wait_for(lambda: read_json(workdir / "start.json"), "the driver's start", START_LIMIT_S)
        else:
            start = read_json(workdir / "start.json")
            wb = Workbench.attach(profile="default", cluster_id=start["cluster_id"], timeout=CALL_TIMEOUT_S,
                                  activate=False)
            counters.cluster_id, counters.n = wb.cluster_id, wb.n
        counters.phase = "attached"
        schedule = Schedule(**params["schedule"])
        notebook = NOTEBOOKS[role](wb, counters, schedule, start["t0"], restarter=client == params["restarter"],
                                   shell=shell)
        notebook.run()
        counters.phase = "closing"
        notebook.close()
        if client == OWNER:  # the others detach first: the world lives until they have gone
            counters.phase = "waiting for the others"
            wait_for(lambda: (workdir / "stop").exists(), "the driver's stop", END_LIMIT_S, quiet=True)
        counters.stopping_at = time.time()
        counters.phase = "stopping"
        wb.stop()
        wb = None
        counters.stopped_at = time.time()
        counters.phase = "stopped"
        return 0
    finally:
        if wb is not None:
            with contextlib.suppress(Exception):
                wb.stop()
        done.set()
        write_json(path, asdict(counters))


def wait_for(condition: Callable[[], Any], what: str, limit: float, quiet: bool = False, every: float = 0.1) -> Any:
    """Poll *condition* until it is true (returned) or *limit* seconds have passed (then raise
    ``TimeoutError``, or return ``None`` when *quiet*)."""
    deadline = time.monotonic() + limit
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            if quiet:
                return None
            raise TimeoutError(f"waited {limit:.0f} s for {what}")
        time.sleep(every)


# ----------------------------------------------------------------- the driver's watching
#: Environment variables that give an MPI process its rank (MPICH, Open MPI, PMIx).
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
#: In the command line of an engine's nanny (ipyparallel starts it as ``python -m`` this).
NANNY = "ipyparallel.engine.nanny"


def _rank_of(process) -> int | None:
    """The MPI rank in *process*'s environment (``None``: no MPI process, or gone)."""
    import psutil

    try:
        environment = process.environ()
    except (psutil.Error, OSError):
        return None
    for name in RANK_VARIABLES:
        if environment.get(name, "").isdigit():
            return int(environment[name])
    return None


def process_groups(client_pids: dict[int, int], rank_children: set) -> dict[str, list]:
    """The soak's processes by role: ``client K`` (each alone), ``controller`` (all its
    processes), ``rank R`` (the engine that is rank R) and ``launch`` (``mpiexec``, its proxy,
    the nannies, the watchdog, …): everything below the clients. A rank's children (its nanny,
    started with the rank's environment) are launch processes, also once their rank is gone:
    a restart kills the ranks first, and their nannies, reparented to the launcher for the
    moment until they see it and exit, would otherwise read as a new world. *rank_children*
    (identities, kept by the caller from one look to the next) remembers them; it is added to."""
    import psutil

    groups: dict[str, list] = {}
    for client, pid in client_pids.items():
        try:
            top = psutil.Process(pid)
            below = top.children(recursive=True)
        except psutil.Error:
            continue
        groups[f"client {client}"] = [top]
        for process in below:
            try:
                line = " ".join(process.cmdline())
                parent = process.parent()
            except psutil.Error:
                continue
            rank = _rank_of(process)
            who = Identity.of(process.pid) if rank is not None else None
            below_a_rank = parent is not None and _rank_of(parent) is not None
            if who is not None and below_a_rank:
                rank_children.add(who)
            if "ipyparallel.controller" in line or controller.FILE in line:
                groups.setdefault("controller", []).append(process)
            elif rank is not None and not below_a_rank and NANNY not in line and who not in rank_children:
                groups.setdefault(f"rank {rank}", []).append(process)
            else:
                groups.setdefault("launch", []).append(process)
    return groups


def _measure(group: list) -> tuple[float | None, int | None]:
    """RSS (MB) and open file descriptors summed over *group*'s live processes."""
    import psutil

    rss, fds, seen = 0, 0, False
    for process in group:
        try:
            with process.oneshot():
                rss += process.memory_info().rss
                fds += process.num_fds()
            seen = True
        except psutil.Error:
            continue
    return (rss / MB, fds) if seen else (None, None)


def world_file_sizes() -> dict[str, int]:
    """The MPI worlds' files in ``/dev/shm`` now, with their sizes."""
    from mpiworkbench.core import shm

    sizes = {}
    with contextlib.suppress(OSError):
        for name in os.listdir(shm.SHM_DIR):
            path = os.path.join(shm.SHM_DIR, name)
            if shm.is_world_file(path):
                with contextlib.suppress(OSError):
                    sizes[path] = os.stat(path).st_size
    return sizes


def shm_bytes() -> int:
    """Bytes of every file in ``/dev/shm`` (the soak's and anyone else's)."""
    from mpiworkbench.core import shm

    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(shm.SHM_DIR):
            with contextlib.suppress(OSError):
                total += entry.stat(follow_symlinks=False).st_size
    return total


class Watcher:
    """Every :data:`WATCH_EVERY_S`: the soak's processes (every one seen, to find any left
    behind), its MPI worlds (a world = the pids of all its ranks, first and last seen), its
    controller, and the ``/dev/shm`` files its ranks map, hold open or are named after."""

    def __init__(self, client_pids: dict[int, int], ranks: int):
        self.client_pids, self.ranks = client_pids, ranks
        self.seen: dict[Any, str] = {}  # core.processes.Identity → role
        self.worlds: list[dict[str, Any]] = []
        self.controllers: list[dict[str, Any]] = []
        self.rank_pids: set[int] = set()
        self.rank_children: set = set()  # core.processes.Identity of every rank's child seen
        self.our_files: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-watcher", daemon=True)

    def start(self) -> "Watcher":
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the looking (idempotent)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(WATCH_EVERY_S):
            with contextlib.suppress(Exception):  # a process gone between two reads: look again
                self.look()

    def look(self) -> dict[str, list]:
        """Look once (see the class); returns :func:`process_groups`."""
        from mpiworkbench.core import shm

        groups = process_groups(self.client_pids, self.rank_children)
        now = time.time()
        with self._lock:
            for role, processes in groups.items():
                for process in processes:
                    who = Identity.of(process.pid)
                    if who is not None:
                        self.seen.setdefault(who, role)
            ranks = {role: processes[0].pid for role, processes in groups.items() if role.startswith("rank ")}
            for pid in ranks.values():
                self.rank_pids.add(pid)
                self.our_files |= shm.files_of(pid) | set(shm.own_files(pid))
            world = tuple(sorted(ranks.values()))
            last = set(self.worlds[-1]["pids"]) if self.worlds else set()
            # ranks of the old world and the new one side by side (a restart under way: the
            # killed ranks are still exiting) are no world of their own
            if len(ranks) == self.ranks and (set(world) == last or not set(world) & last):
                self._note(self.worlds, world, now)
            controller = [p.pid for p in groups.get("controller", []) if p.pid in self._controller_roots(groups)]
            if controller:
                self._note(self.controllers, tuple(controller), now)
        return groups

    def _controller_roots(self, groups: dict[str, list]) -> set[int]:
        """The controller's main process (the one a client started)."""
        roots = set()
        for process in groups.get("controller", []):
            with contextlib.suppress(Exception):
                if process.ppid() in self.client_pids.values():
                    roots.add(process.pid)
        return roots

    @staticmethod
    def _note(history: list[dict[str, Any]], pids: tuple, now: float) -> None:
        if history and history[-1]["pids"] == list(pids):
            history[-1]["last_seen"] = now
        else:
            history.append({"pids": list(pids), "first_seen": now, "last_seen": now})

    def left_running(self) -> list[str]:
        """Processes of the soak still running (the same pid and start time as seen)."""
        with self._lock:
            seen = dict(self.seen)
        return [f"{who.pid} ({role}): {cmdline(who.pid)[:160]}" for who, role in sorted(seen.items()) if who.alive()]

    def end_left(self) -> None:
        """SIGTERM, then SIGKILL, every process of the soak still running (pid and start time)."""
        with self._lock:
            seen = list(self.seen)
        end(seen, grace=5.0)


# ------------------------------------------------------------------------------ sampling
def role_names(clients: int, ranks: int) -> list[str]:
    """The roles measured, in the table's order."""
    return [f"client {k}" for k in range(clients)] + ["controller"] + [f"rank {r}" for r in range(ranks)] + ["launch"]


def sample(t: float, watcher: Watcher, workdir: Path, clients: int) -> dict[str, Any]:
    """One row: per role RSS (MB) and fds, the world's ``/dev/shm`` bytes, the clients' counters."""
    groups = watcher.look()
    roles: dict[str, dict[str, Any]] = {}
    for role in role_names(clients, watcher.ranks):
        rss, fds = _measure(groups.get(role, []))
        roles[role] = {"rss_mb": rss, "fds": fds, "pids": [p.pid for p in groups.get(role, [])]}
    with watcher._lock:
        ours = set(watcher.our_files)
    files = world_file_sizes()
    statuses = {k: read_json(status_path(workdir, k)) or {} for k in range(clients)}
    total = {key: sum(int(s.get(key, 0)) for s in statuses.values())
             for key in ("calls", "failed", "frames", "restarts_done", "restarts_followed")}
    return {"t": round(t, 1), "minute": round(t / 60, 2), "roles": roles,
            "shm_world_mb": sum(size for path, size in files.items() if path in ours) / MB,
            "shm_all_mb": shm_bytes() / MB, "clients": statuses, **total}


#: Column headings of the roles, and their short names (the fds column).
ROLE_HEADINGS = {"client 0": "c0 wave", "client 1": "c1 CG", "client 2": "c2 cells", "controller": "controller",
                 "rank 0": "rank 0", "rank 1": "rank 1", "launch": "launch"}
ROLE_SHORT = {"client 0": "c0", "client 1": "c1", "client 2": "c2", "controller": "ctl", "rank 0": "r0",
              "rank 1": "r1", "launch": "aux"}


def table_header(roles: list[str]) -> str:
    names = [ROLE_HEADINGS.get(role, role) + " MB" for role in roles]
    columns = ["min", *names, "fds (" + "/".join(ROLE_SHORT.get(r, r) for r in roles) + ")",
               "/dev/shm MB (world / all)", "calls", "frames", "failed", "restarts done / followed", "deaths"]
    return "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)


def table_row(row: dict[str, Any], roles: list[str], deaths: int) -> str:
    def mb(value):
        return "–" if value is None else f"{value:.0f}"

    fds = "/".join("–" if row["roles"][r]["fds"] is None else str(row["roles"][r]["fds"]) for r in roles)
    cells = [f"{row['minute']:.2f}", *(mb(row["roles"][r]["rss_mb"]) for r in roles), fds,
             f"{row['shm_world_mb']:.1f} / {row['shm_all_mb']:.1f}", str(row["calls"]), str(row["frames"]),
             str(row["failed"]), f"{row['restarts_done']} / {row['restarts_followed']}", str(deaths)]
    return "| " + " | ".join(cells) + " |"


# ------------------------------------------------------------------------------- verdict
def drift(samples: list[dict[str, Any]], role: str, settle_s: float) -> dict[str, Any]:
    """*role*'s RSS after *settle_s*: its largest growth above its value at *settle_s*, and the
    bound the growth must stay within. Only growth counts: a rank replaced by a restart starts
    small again (the lowest value is reported). The reference is the highest value measured up
    to *settle_s*: a restart under way at that moment (the role's process absent, or new and
    still small) does not make the settled value of the processes that follow read as growth."""
    measured = [(s["t"], s["roles"][role]["rss_mb"]) for s in samples]
    measured = [(t, v) for t, v in measured if v]  # None or 0: no such process at that moment
    later = [(t, v) for t, v in measured if t > settle_s]
    early = [(t, v) for t, v in measured if t <= settle_s]
    if not later and not early:
        return {"role": role, "reference_mb": None, "ok": False, "why": "never measured"}
    t_ref, ref = max(early, key=lambda tv: tv[1]) if early else later.pop(0)
    highest = max(later, key=lambda tv: tv[1], default=(t_ref, ref))
    lowest = min(later, key=lambda tv: tv[1], default=(t_ref, ref))
    bound = max(RSS_DRIFT_FRACTION * ref, RSS_DRIFT_FLOOR_MB)
    growth = highest[1] - ref
    return {"role": role, "reference_minute": round(t_ref / 60, 2), "reference_mb": round(ref, 1),
            "highest_minute": round(highest[0] / 60, 2), "highest_mb": round(highest[1], 1),
            "growth_mb": round(growth, 1), "lowest_mb": round(lowest[1], 1), "bound_mb": round(bound, 1),
            "ok": growth <= bound}


def deaths(watcher: Watcher, statuses: dict[int, dict], exits: dict[int, int | None], stop_began: float | None,
           schedule_end: float) -> list[str]:
    """What ended unplanned: clients (a non-zero exit, or an end before the schedule's), the
    controller (replaced, or gone before the final stop) and MPI worlds (more than the
    restarts explain, or the last one gone before the final stop)."""
    said = []
    for client, code in exits.items():
        status = statuses.get(client) or {}
        if code != 0:
            said.append(f"client {client} ({ROLES[client]}) exited with {code}")
        elif status.get("phase") != "stopped":
            said.append(f"client {client} ({ROLES[client]}) ended in phase {status.get('phase')!r}")
    if len(watcher.controllers) > 1:
        said.append(f"the controller was replaced {len(watcher.controllers) - 1} time(s)")
    restarts = sum(int((s or {}).get("restarts_done", 0)) for s in statuses.values())
    if len(watcher.worlds) - 1 > restarts:
        said.append(f"{len(watcher.worlds)} MPI worlds for {restarts} restart(s)")
    ended = stop_began if stop_began else schedule_end
    for what, history in (("MPI world", watcher.worlds), ("controller", watcher.controllers)):
        if not history:
            said.append(f"no {what} was ever seen")
        elif history[-1]["last_seen"] < ended - GONE_MARGIN_S:
            gone = time.strftime("%H:%M:%S", time.localtime(history[-1]["last_seen"]))
            said.append(f"the last {what} was gone by {gone}, before the final stop")
    return said


def deaths_so_far(watcher: Watcher, processes: dict[int, subprocess.Popen], statuses: dict[int, dict],
                  schedule_over: bool) -> int:
    """Unplanned ends up to now (for the table): clients that have exited (failing, or before
    the schedule was over), controllers replaced, MPI worlds beyond the restarts done, and the
    world when none has been whole for :data:`WORLD_ABSENT_S`."""
    clients = sum(process.poll() not in (None, 0) or (process.poll() == 0 and not schedule_over)
                  for process in processes.values())
    restarts = sum(int((s or {}).get("restarts_done", 0)) for s in statuses.values())
    absent = bool(watcher.worlds) and time.time() - watcher.worlds[-1]["last_seen"] > WORLD_ABSENT_S
    return clients + max(0, len(watcher.controllers) - 1) + max(0, len(watcher.worlds) - 1 - restarts) + int(absent)


# -------------------------------------------------------------------------------- driver
def run_soak(minutes: float = MINUTES, interval: float = INTERVAL_S, restart_every: float = RESTART_EVERY_MIN,
             idle: float = IDLE_MIN, idle_every: float = IDLE_EVERY_MIN, settle: float = SETTLE_MIN,
             burst: float = BURST_S, pause: float = PAUSE_S, restarter: int = OWNER, restart_in_pause: bool = True,
             workdir: str | Path | None = None, json_path: str | Path | None = None,
             out: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the soak (see the module's docstring) and return its report: the parameters, every
    sample, the clients' final counters, the worlds seen, ``/dev/shm`` before and after, the
    processes left, the checks, ``ok`` (all checks hold) and ``text`` (everything printed).

    Parameters
    ----------
    minutes, interval, restart_every, idle, idle_every, settle, burst, pause
        The schedule (minutes, except *interval*, *burst* and *pause*: seconds).
    restarter : int
        The client that restarts the world (the owner, client 2, by default).
    restart_in_pause : bool
        Restart while the others think (by default), or at the due time, while they play.
    workdir : path, optional
        Where the IPython directory, the clients' status files and logs go; a temporary
        directory (removed afterwards) by default.
    json_path : path, optional
        Write the report there too.
    out : callable
        Where the table's rows and the verdict go, line by line.
    """
    printed: list[str] = []

    def say(line: str) -> None:
        printed.append(line)
        out(line)

    schedule = Schedule(minutes, burst, pause, idle, idle_every, restart_every, restart_in_pause)
    if not 0 <= settle * 60 < schedule.total:
        raise ValueError(f"--settle must be within the run: got {settle} min for a {minutes} min run")
    if not 0 <= restarter < len(ROLES):
        raise ValueError(f"--restarter must be a client 0-{len(ROLES) - 1}; got {restarter}")
    temporary = workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="mpiwb-soak-") if temporary else workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ipython_dir = workdir / "ipython"
    ipython_dir.mkdir(exist_ok=True)
    environment = {**os.environ, "IPYTHONDIR": str(ipython_dir), "MPLBACKEND": "Agg", "IPP_NONINTERACTIVE": "1"}
    params = {"minutes": minutes, "interval": interval, "restart_every": restart_every, "idle": idle,
              "idle_every": idle_every, "settle": settle, "burst": burst, "pause": pause, "restarter": restarter,
              "ranks": RANKS, "schedule": asdict(schedule)}
    write_json(workdir / "soak.json", params)
    files_before = world_file_sizes()
    shm_before = shm_bytes()
    processes: dict[int, subprocess.Popen] = {}
    logs = []
    watcher = None
    samples: list[dict[str, Any]] = []
    exits: dict[int, int | None] = {}
    t0 = None
    roles = role_names(len(ROLES), RANKS)

    def start_client(client: int) -> None:
        log = open(workdir / f"client-{client}.log", "w")  # noqa: SIM115 - closed at the end
        logs.append(log)
        processes[client] = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--client", str(client), "--workdir", str(workdir)],
            env=environment, cwd=workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)

    try:
        start_client(OWNER)
        watcher = Watcher({k: p.pid for k, p in processes.items()}, RANKS).start()

        def owner_ready():
            if processes[OWNER].poll() is not None:
                raise RuntimeError(f"the owner (client {OWNER}) exited with {processes[OWNER].returncode}:\n"
                                   + (workdir / f"client-{OWNER}.log").read_text()[-3000:])
            status = read_json(status_path(workdir, OWNER)) or {}
            return status.get("cluster_id") if status.get("phase") == "world started" else None

        cluster_id = wait_for(owner_ready, "the owner's world to start", START_LIMIT_S)
        t0 = time.time() + ATTACH_LEAD_S
        write_json(workdir / "start.json", {"t0": t0, "cluster_id": cluster_id})
        for client in range(len(ROLES)):
            if client != OWNER:
                start_client(client)
        watcher.client_pids.update({k: p.pid for k, p in processes.items()})
        idle_gaps = ", ".join(f"{a / 60:.2f}-{b / 60:.2f}" for a, b in schedule.idle_windows()) or "never"
        restart_times = ", ".join(f"{t / 60:.2f}" for t in schedule.restarts()) or "no time"
        say(f"soak: {minutes:g} min, 1 world of {RANKS} ranks (cluster {cluster_id}), {len(ROLES)} notebooks "
            f"({', '.join(f'{k} {r}' for k, r in enumerate(ROLES))}); bursts of {burst:g} s every "
            f"{schedule.period:g} s; idle {idle_gaps} min; restarts by client {restarter} at {restart_times} min "
            f"({'in pauses' if restart_in_pause else 'while the others play'}); "
            f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; workdir {workdir}\n")
        say(table_header(roles))
        for i in range(int(schedule.total // interval) + 1):
            time.sleep(max(0.0, t0 + i * interval - time.time()))
            row = sample(time.time() - t0, watcher, workdir, len(ROLES))
            samples.append(row)
            over = time.time() >= t0 + schedule.total
            say(table_row(row, roles, deaths_so_far(watcher, processes, row["clients"], over)))
        # the schedule is over: the attached notebooks detach, then the owner stops the world
        for client, process in processes.items():
            if client != OWNER:
                exits[client] = _wait(process, END_LIMIT_S)
        (workdir / "stop").touch()
        exits[OWNER] = _wait(processes[OWNER], END_LIMIT_S)
        statuses = {k: read_json(status_path(workdir, k)) or {} for k in range(len(ROLES))}
        stop_began = statuses[OWNER].get("stopping_at") or None
        gone = wait_for(lambda: not watcher.left_running(), "the stopped world's processes to end", GONE_LIMIT_S,
                        quiet=True, every=0.5)
        watcher.stop()
        left = [] if gone else watcher.left_running()
        files_after = world_file_sizes()
        named = tuple(f"mpiworkbench-{pid}." for pid in watcher.rank_pids)  # the interposer's files of our ranks
        ours_left = sorted(path for path in files_after
                           if path in watcher.our_files or os.path.basename(path).startswith(named))
        from mpiworkbench.core import shm

        new_unused = sorted(set(files_after) - set(files_before) - set(ours_left) - shm.in_use(set(files_after)))
        report = verdict(samples, statuses, exits, watcher, schedule, settle, stop_began, t0, left, ours_left,
                         files_before, files_after, new_unused, shm_before, restarter)
        report["params"] = params
        report["cluster_id"] = cluster_id
        for line in report["lines"]:
            say(line)
        report["text"] = "\n".join(printed)
        if json_path:
            Path(json_path).write_text(json.dumps(report, indent=1, default=str))
        return report
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(END_LIMIT_S / 10)
            if process.poll() is None:
                process.kill()
                process.wait()
        if watcher is not None:
            watcher.stop()
            watcher.end_left()
        for log in logs:
            log.close()
        if temporary:
            shutil.rmtree(workdir, ignore_errors=True)


def _wait(process: subprocess.Popen, limit: float) -> int | None:
    try:
        return process.wait(limit)
    except subprocess.TimeoutExpired:
        return None


def verdict(samples, statuses, exits, watcher, schedule, settle, stop_began, t0, left, ours_left,
            files_before, files_after, new_unused, shm_before, restarter) -> dict[str, Any]:
    """The checks of the soak (each ``{"what", "ok", "detail"}``) and their lines of text."""
    roles = list(samples[-1]["roles"]) if samples else []
    died = deaths(watcher, statuses, exits, stop_began, (t0 or 0) + schedule.total)
    failed = sum(int(s.get("failed", 0)) for s in statuses.values())
    calls = sum(int(s.get("calls", 0)) for s in statuses.values())
    frames = sum(int(s.get("frames", 0)) for s in statuses.values())
    planned = len(schedule.restarts())
    done = int(statuses.get(restarter, {}).get("restarts_done", 0))
    followed = {k: int(s.get("restarts_followed", 0)) for k, s in statuses.items() if k != restarter}
    drifts = [drift(samples, role, settle * 60) for role in roles]
    errors = [f"client {k}: {s['failed']} failed, the first at {s['first_errors'][0]}"
              + (f"; the last at {s['errors'][-1]}" if int(s["failed"]) > 1 else "")
              for k, s in statuses.items() if int(s.get("failed", 0)) and s.get("first_errors")]
    checks = [
        {"what": "deaths", "ok": not died, "detail": f"{len(died)}" + (": " + "; ".join(died) if died else "")},
        {"what": "failed calls", "ok": failed == 0,
         "detail": f"{failed} of {calls} calls ({frames} frames)" + "".join(f"\n    {e}" for e in errors)},
        {"what": "restarts", "ok": done == planned and all(v == done for v in followed.values()),
         "detail": f"{done} of {planned} planned, by client {restarter}; followed by "
                   + ", ".join(f"client {k}: {v}" for k, v in followed.items())},
        *({"what": f"RSS {d['role']}", "ok": d["ok"],
           "detail": (d.get("why") or f"{d['reference_mb']:.0f} MB at minute {d['reference_minute']:.2f}, grew "
                      f"{d['growth_mb']:+.1f} MB at most (minute {d['highest_minute']:.2f}; "
                      f"bound +{d['bound_mb']:.0f} MB); lowest {d['lowest_mb']:.0f} MB")}
          for d in drifts),
        {"what": "processes left after the stop", "ok": not left,
         "detail": f"{len(left)}" + "".join(f"\n    {p}" for p in left)},
        {"what": "/dev/shm after the stop", "ok": not ours_left,
         "detail": f"world files {len(files_before)} ({sum(files_before.values()) / MB:.1f} MB) before the start, "
                   f"{len(files_after)} ({sum(files_after.values()) / MB:.1f} MB) after the stop; the soak's left: "
                   f"{len(ours_left)}" + "".join(f"\n    {p}" for p in ours_left)
                   + (f"; other new files nobody uses (other MPI jobs meanwhile?): {new_unused}" if new_unused else "")
                   + f"; /dev/shm all files {shm_before / MB:.1f} MB before, {shm_bytes() / MB:.1f} MB after"},
    ]
    fds_growth = {}
    for role in roles:
        values = [s["roles"][role]["fds"] for s in samples if s["t"] >= settle * 60]
        values = [v for v in values if v is not None]
        if values:
            fds_growth[role] = max(values) - values[0]
    lines = ["", "## Verdict", ""]
    lines += [f"- {'ok  ' if c['ok'] else 'FAIL'} {c['what']}: {c['detail']}" for c in checks]
    lines.append(f"- open files after minute {settle:g} (growth at most, not a bound): "
                 + ", ".join(f"{ROLE_HEADINGS.get(r, r)} {g:+d}" for r, g in fds_growth.items()))
    ok = all(c["ok"] for c in checks)
    lines.append(f"\n{'PASS' if ok else 'FAIL'}: {sum(c['ok'] for c in checks)} of {len(checks)} checks hold")
    return {"ok": ok, "checks": checks, "lines": lines, "samples": samples, "clients": statuses,
            "exits": exits, "deaths": died, "drifts": drifts, "fds_growth": fds_growth,
            "worlds": watcher.worlds, "controllers": watcher.controllers, "left": left,
            "shm": {"before": files_before, "after": files_after, "ours_left": ours_left, "new_unused": new_unused},
            "calls": calls, "failed": failed, "frames": frames, "restarts_planned": planned, "restarts_done": done,
            "restarts_followed": followed}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=MINUTES, help="length of the run")
    parser.add_argument("--interval", type=float, default=INTERVAL_S, help="seconds between two samples")
    parser.add_argument("--restart-every", type=float, default=RESTART_EVERY_MIN,
                        help="minutes between two restarts of the world (0: none)")
    parser.add_argument("--idle", type=float, default=IDLE_MIN, help="minutes of every idle gap (0: none)")
    parser.add_argument("--idle-every", type=float, default=IDLE_EVERY_MIN, help="minutes between idle gaps' centres")
    parser.add_argument("--settle", type=float, default=SETTLE_MIN,
                        help="minute whose RSS the later samples are compared with")
    parser.add_argument("--burst", type=float, default=BURST_S, help="seconds every client works in a row")
    parser.add_argument("--pause", type=float, default=PAUSE_S, help="seconds every client then thinks")
    parser.add_argument("--restart-while-playing", action="store_true",
                        help="restart at the due time, while the others' panels play (not in a pause)")
    parser.add_argument("--restarter", type=int, default=OWNER,
                        help=f"the client that restarts the world ({OWNER}, the owner, by default)")
    parser.add_argument("--workdir", help="keep the IPython directory, status files and client logs here")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--client", type=int, help=argparse.SUPPRESS)  # a notebook process (started by the driver)
    args = parser.parse_args(argv)
    if args.client is not None:
        return client_main(args.client, Path(args.workdir))
    report = run_soak(args.minutes, args.interval, args.restart_every, args.idle, args.idle_every, args.settle,
                      args.burst, args.pause, args.restarter, not args.restart_while_playing, args.workdir, args.json,
                      out=lambda line: print(line, flush=True))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
