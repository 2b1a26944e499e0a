"""Save a session's MPI work as a batch job: ``wb.export_job(path)`` (``%pxjob PATH``, the control
panel's *Save as job*).

From the session's journal (:mod:`mpiworkbench.client.calls.journal`) it takes the calls of the
world that runs now, in order; those that ended ``ok`` go into the job, numbered, the others are
listed as left out. It asks the ranks once for the values named (:func:`mpiworkbench.jobs.runner.values_here`,
the function a job's ranks end with) and reads the world's facts; then it writes the directory
(:mod:`mpiworkbench.jobs`: ``job.py``, ``job.json``, ``data/``, ``run.sh``, ``job.sbatch``,
``README.md``).
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import mpiworkbench
from mpiworkbench.core import implementations, launchers, sitempi
from mpiworkbench.jobs import layout, render
from mpiworkbench.jobs.runner import values_here

#: The variables of the kernel's environment that chose the ranks' MPI and launcher: carried into
#: ``run.sh`` and ``job.sbatch``.
CHOOSING = (implementations.VARIABLE, implementations.ROOT_VARIABLE, sitempi.MPIEXEC_VARIABLE,
            sitempi.MPICC_VARIABLE, sitempi.FACTS_VARIABLE)


@dataclass
class SavedJob:
    """What :func:`export_job` wrote: the directory, and the calls in it and left out."""

    path: Path
    calls: int
    cells: int
    left_out: list[dict[str, Any]] = field(default_factory=list)
    values: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        left = f"; left out: {len(self.left_out)} (README.md says which)" if self.left_out else ""
        values = f"; values: {', '.join(self.values)}" if self.values else ""
        return (f"<job {str(self.path)!r}: {self.calls} call(s), {self.cells} of them %%px cells{values}{left}; "
                f"run it with `mpiworkbench job run {self.path} --np N`>")


def _value_specs(values: Sequence[Any] | Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The values to keep: names of the ranks' namespace, or solver handles (their gathered field),
    as a list, or a mapping label → either."""
    if values is None:
        return []
    items = values.items() if isinstance(values, Mapping) else ((v if isinstance(v, str) else None, v) for v in values)
    specs = []
    for label, value in items:
        if isinstance(value, str):
            if not value.isidentifier():
                raise ValueError(f"value {value!r} is not a Python name: name a variable the cells leave on the ranks")
            specs.append({"label": label or value, "kind": "name", "name": value})
        elif getattr(value, "_obj", None) is not None and hasattr(value, "factory"):
            if label is None:
                raise ValueError(f"a solver handle ({type(value).__name__}) needs a label: pass values={{'u': handle}}")
            specs.append({"label": label, "kind": "object", "key": value._obj.key, "method": "gather"})
        else:
            raise ValueError(f"value {value!r} is neither a name nor a solver handle of this session: pass the "
                             f"name of a variable on the ranks (a str) or a handle of wb.wave / wb.cg / wb.heat")
    return specs


def _one_line(error: str) -> str:
    """The line of a call's error that says what went wrong (a rank-by-rank report's first line
    that names an error), shortened: what the job's listing of a left-out call shows."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    named = next((line for line in lines if "Error" in line or "Exception" in line), lines[0] if lines else "")
    return named if len(named) <= 200 else named[:199] + "…"


def _world_facts(wb) -> dict[str, Any]:
    """The world the job reproduces: its size and hosts, MPI, launcher and environment."""
    facts = wb.environment()
    impl = implementations.get(wb.mpi)
    inside = {**os.environ, "SLURM_JOB_ID": os.environ.get("SLURM_JOB_ID", "batch")}
    try:
        launcher = impl.launcher(inside)
    except launchers.LauncherError as exc:
        launcher = launchers.Launcher("mpiexec", why=str(exc))
    variables = {name: os.environ[name] for name in CHOOSING if os.environ.get(name)}
    variables.setdefault(implementations.VARIABLE, impl.name)
    return {
        "n": wb.n,
        "hosts": sorted(set(wb.hosts.values())),
        "mpi": impl.name,
        "library": facts.get("mpi_library", ""),
        "library_file": facts.get("mpi_library_file", ""),
        "python": sys.executable,
        "cluster_launcher": wb.launcher,
        "launcher_line": " ".join([Path(launcher.words[0]).name, *launcher.words[1:]]) if launcher.srun else
                         f"{impl.name}'s mpiexec",
        "launcher_choice": "srun" if launcher.srun else "mpiexec",
        "launcher_setting": launchers.VARIABLE,
        "modules": os.environ.get("LOADEDMODULES", "").split(":") if os.environ.get("LOADEDMODULES") else [],
        "variables": variables,
    }


def export_job(wb, path: str | os.PathLike, values: Sequence[Any] | Mapping[str, Any] | None = None,
               minutes: int | None = None, name: str | None = None, overwrite: bool = False) -> SavedJob:
    """Write the session's MPI work since its world started as a job in directory *path*.

    Parameters
    ----------
    wb
        A running session.
    path
        The job's directory (made; an existing one only with *overwrite*, and only if it is a job).
    values
        Values to compare runs by: names of variables the cells leave on the ranks (rank 0's is
        kept), or ``{label: name or solver handle}`` (a handle's field, gathered).
    minutes
        The Slurm time limit of ``job.sbatch`` (default: three times the calls' time, at least 10).
    name
        The job's name (Slurm's ``--job-name``; default the directory's name).
    """
    if wb.view is None:
        raise RuntimeError("the workbench is not running: there is no world to save; start it and run the cells first")
    path = Path(path).expanduser().resolve()
    if path.exists() and any(path.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{path} exists and is not empty: name a new directory, or pass overwrite=True "
                                  f"to replace the job there")
        if not (path / layout.META).exists():
            raise FileExistsError(f"{path} is not a job directory (it has no {layout.META}): overwrite=True "
                                  f"replaces only a job; name a new directory")
    journal = wb.calls.journal
    world = wb.calls.world()
    entries = journal.of_world(world)
    specs = _value_specs(values)
    with journal.paused():
        facts = _world_facts(wb)
        session_values = wb.run(values_here, specs)[0] if specs else {}
    missing = [s.get("name", s["label"]) for s in specs if s["label"] not in session_values]
    if missing:
        raise ValueError(f"value(s) {', '.join(map(repr, missing))} are not variables on rank 0: name variables the "
                         f"cells left on the ranks (%px print(sorted(globals())) lists them)")
    calls, left_out, seconds = [], [], 0.0
    for entry in entries:
        if entry.outcome != "ok":
            left_out.append({"label": entry.label, "outcome": entry.outcome, "error": _one_line(entry.error)})
            continue
        number = len(calls) + 1
        record = {"number": number, "kind": entry.kind, "label": entry.label, "seconds": round(entry.seconds, 3)}
        if entry.kind == "cell":
            record.update(source=entry.source, trace=entry.trace, ranks=entry.ranks,
                          digests={str(r): d for r, d in sorted(entry.digests.items())})
        else:
            record.update(function=entry.function, data=layout.data_file(number), repeat=entry.repeat)
        calls.append((record, entry))
        seconds += entry.seconds
    meta = {
        "format": layout.FORMAT,
        "name": name or path.name,
        "saved": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "mpiworkbench": mpiworkbench.__version__,
        "world": facts,
        "calls": [record for record, _ in calls],
        "left_out": left_out,
        "values": specs,
        "before_restart": sum(1 for e in journal.entries if e.world != world),
        "dropped": journal.dropped,
        "minutes": minutes or render.minutes_for(seconds),
    }
    if path.exists():  # (a job, to be replaced: checked above, once everything to write is known)
        shutil.rmtree(path)
    (path / layout.DATA).mkdir(parents=True)
    # job.sbatch's --output names a file in it: Slurm opens that before the script runs and makes
    # no directory (without it the job fails at once: "Could not open stdout file")
    (path / layout.OUTPUT).mkdir()
    for record, entry in calls:
        if entry.kind == "call":
            (path / record["data"]).write_bytes(pickle.dumps(entry.payload))
    if session_values:
        import numpy as np

        np.savez(path / layout.SESSION_VALUES, **session_values)
    (path / layout.META).write_text(json.dumps(meta, indent=1))
    (path / layout.PROGRAM).write_text(render.program(meta))
    for name_, text in ((layout.RUN_SH, render.run_sh(meta)), (layout.SBATCH, render.sbatch(meta))):
        (path / name_).write_text(text)
        (path / name_).chmod(0o755)
    (path / layout.README).write_text(render.readme(meta))
    return SavedJob(path, len(calls), sum(1 for r, _ in calls if r["kind"] == "cell"), left_out,
                    [s["label"] for s in specs])
