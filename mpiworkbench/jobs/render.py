"""The job directory's texts, from its ``job.json``: ``job.py``, ``run.sh``, ``job.sbatch`` and the
README. Pure functions of the metadata (the export, :mod:`mpiworkbench.drivers.job`, gathers it)."""

from __future__ import annotations

import math
import shlex
from typing import Any

from mpiworkbench.jobs import layout


def literal(source: str) -> str:
    """*source* as a Python string literal that reads like the cell, exactly: a triple-quoted
    string from the next line on when it can be one, else ``repr``."""
    if '"""' not in source and "\\" not in source and not source.endswith('"'):
        return '"""\\\n' + source + '"""'
    return repr(source)


def program(meta: dict[str, Any]) -> str:
    """``job.py``: the program every rank runs."""
    world = meta["world"]
    lines = [
        "#!/usr/bin/env python",
        f'"""The MPI work of a notebook session, saved on {meta["saved"]} by mpiworkbench {meta["mpiworkbench"]}:',
        f"{world['n']} rank(s) of {world.get('library') or world.get('mpi')}, on {', '.join(world.get('hosts', [])) or 'this host'}.",
        "",
        "Every rank runs this program: the session's calls in the order they ran, in one namespace per",
        "rank as on the engines. Run it with `./run.sh [NP]`, `sbatch job.sbatch`, or",
        "`mpiworkbench job run . --np NP`; each rank's output goes to output/np-NP/ (README.md).",
        'Edit the cells as you like; job.json holds the rest (the calls\' data, the session\'s digests)."""',
        "",
        "from mpiworkbench.jobs.runner import Job",
        "",
        "job = Job(__file__)",
        "",
    ]
    for call in meta["calls"]:
        lines.append(f"# [{call['number']}] {call['label']}")
        if call["kind"] == "cell":
            options = "".join([", trace=True" if call.get("trace") else "",
                               f", ranks={call['ranks']!r}" if call.get("ranks") is not None else ""])
            lines.append(f"job.cell({call['number']}, {literal(call['source'])}{options})")
        else:
            again = f" ({call['repeat']} times in a row)" if call.get("repeat", 1) > 1 else ""
            lines.append(f"job.call({call['number']})  # {call['function']}{again}: {call['data']}")
        lines.append("")
    for left in meta.get("left_out", []):
        said = " ".join(f"{left['outcome']}: {left.get('error', '')}".split())  # one comment line, whatever it holds
        lines.append(f"# left out: {left['label']} ({said.rstrip(': ')})")
    if meta.get("left_out"):
        lines.append("")
    lines += ["job.finish()", ""]
    return "\n".join(lines)


def _exports(meta: dict[str, Any]) -> list[str]:
    world = meta["world"]
    lines = []
    if world.get("modules"):
        lines.append(f"module load {' '.join(shlex.quote(m) for m in world['modules'])}")
    for name, value in sorted(world.get("variables", {}).items()):
        lines.append(f"export {name}={shlex.quote(value)}")
    return lines


def run_sh(meta: dict[str, Any]) -> str:
    """``run.sh [NP]``: the job on a workstation (the session's size by default)."""
    world = meta["world"]
    return "\n".join([
        "#!/bin/sh",
        f"# The job on this machine: `./run.sh` at the session's {world['n']} rank(s), `./run.sh NP` at NP.",
        "# mpiworkbench job run starts the ranks as the session's world was started (its mpiexec, its",
        "# environment, the MPI interposer for traced cells), then compares the run with the session.",
        f"# Without the comparison (and untraced): mpiexec -n {world['n']} {world['python']} -m mpi4py job.py",
        "set -e",
        *_exports(meta),
        'here=$(cd "$(dirname "$0")" && pwd)',
        f'exec {shlex.quote(world["python"])} -m mpiworkbench job run "$here" --np "${{1:-{world["n"]}}}"',
        "",
    ])


def sbatch(meta: dict[str, Any], minutes: int | None = None) -> str:
    """``job.sbatch``: the job under Slurm, at the session's size and node count."""
    world = meta["world"]
    hosts = max(1, len(world.get("hosts", [])))
    minutes = minutes or meta.get("minutes") or 30
    launcher = world.get("launcher_line") or world.get("launcher", "mpiexec")
    return "\n".join([
        "#!/bin/bash",
        f"#SBATCH --job-name={meta.get('name', 'mpiworkbench-job')}",
        f"#SBATCH --ntasks={world['n']}",
        f"#SBATCH --nodes={hosts}",
        f"#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00",
        f"#SBATCH --output={layout.OUTPUT}/slurm-%j.out",
        "#",
        f"# The session's MPI: {world.get('library') or world.get('mpi')}; its ranks were started by {launcher}.",
        "# mpiworkbench job run starts them the same way inside this allocation (srun with the PMI the",
        f"# library speaks, or its mpiexec: {world.get('launcher_setting', 'MPIWORKBENCH_LAUNCHER')} below) at",
        "# --ntasks ranks; sbatch --ntasks=M job.sbatch runs it at M.",
        *_exports(meta),
        f"export MPIWORKBENCH_LAUNCHER={world.get('launcher_choice', 'auto')}",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        f'exec {shlex.quote(world["python"])} -m mpiworkbench job run . --np "$SLURM_NTASKS" '
        f'--timeout {max(60, minutes * 60 - 30)}',
        "",
    ])


def readme(meta: dict[str, Any]) -> str:
    """What was captured, what was not, and how to run it."""
    world = meta["world"]
    calls = meta["calls"]
    cells = sum(1 for c in calls if c["kind"] == "cell")
    lines = [
        f"# {meta.get('name', 'mpiworkbench job')}",
        "",
        f"Saved on {meta['saved']} from a notebook session of {world['n']} rank(s) "
        f"({world.get('library') or world.get('mpi')}; hosts {', '.join(world.get('hosts', [])) or 'this one'}) "
        f"by mpiworkbench {meta['mpiworkbench']}.",
        "",
        "## What it holds",
        "",
        f"- {len(calls)} call(s) the ranks ran, in order: {cells} `%%px` cell(s) and {len(calls) - cells} "
        "call(s) of functions (`wb.run`, the solvers' handles, pushes, drivers), in `job.py`.",
        "- For each cell, a digest of what each rank printed: a run at the session's size must print the same.",
    ]
    if meta.get("values"):
        lines.append(f"- The values named at export, and the session's: {', '.join(v['label'] for v in meta['values'])} "
                     f"(`{layout.SESSION_VALUES}`).")
    lines += ["", "## What it does not hold", "",
              "- What ran in the notebook itself: plots, widgets, the notebook's own variables (a function "
              "of the notebook is in it as `wb.run` sent it).",
              "- Calls of other notebooks on the same world, and calls made through ipyparallel's own "
              "API (`wb.view`, `wb.client`)."]
    if meta.get("before_restart"):
        lines.append(f"- {meta['before_restart']} call(s) made before the world's last restart.")
    if meta.get("dropped"):
        lines.append(f"- The session's first {meta['dropped']} call(s): the journal keeps the last "
                     "20,000; the job starts from a later state than the session's.")
    for left in meta.get("left_out", []):
        lines.append(f"- Left out, {left['outcome']}: {left['label']}" + (f" ({left['error']})" if left.get("error") else ""))
    lines += ["", "## Run it", "",
              "```",
              f"./run.sh                 # here, at {world['n']} rank(s), under the session's MPI",
              f"./run.sh {2 * world['n']}               # at another size",
              "sbatch job.sbatch        # under Slurm (sbatch --ntasks=M job.sbatch for M ranks)",
              "```",
              "",
              "Each run writes `output/np-N/`: `cells.txt` (each cell's output as `%%px` showed it), "
              "`rank-R.jsonl` (each rank's record of each call), `values.npz`, a Chrome trace per "
              "`%%px --trace` cell, and `compare.json`. At the session's size every cell's output must "
              "equal the session's, rank by rank; at any size the values must. `mpiworkbench job run` "
              "exits 0 when they do, 3 when something differs, 1 when a call failed.",
              ""]
    return "\n".join(lines)


def minutes_for(seconds: float) -> int:
    """Minutes of ``--time`` for a job whose calls took *seconds* in the session: room for
    starting and for a slower machine, at least 10."""
    return max(10, int(math.ceil(seconds * 3 / 60.0)) + 5)
