"""A job's run against its session: each cell's output on each rank, and the values.

:func:`report` reads what every rank recorded (``output/np-N/rank-R.jsonl``: the runner's, up to
where the job ended) and writes, beside it, ``cells.txt`` (each cell's output as ``%%px`` shows
it: grouped, rank ranges) and ``compare.json``; it returns the lines to print and an exit code.

At the session's size every cell's output must equal the session's on every rank (its digest).
At another size a cell that prints its rank or the world's size prints something else, so the
cells' digests are compared and shown but decide nothing; the values named at export (rank 0's:
a solver's gathered field, a norm every rank agrees on) must equal the session's at any size,
within :data:`RTOL` and :data:`ATOL` (the order of a reduction's sums follows the world's size).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mpiworkbench.client.calls.output import GroupedOutput, RankOutput
from mpiworkbench.jobs import layout

#: Relative and absolute tolerance of a value against the session's.
RTOL, ATOL = 1e-9, 1e-12
#: Exit codes: the job ran and equals the session; a call failed or the job ended early; it ran to
#: its end and some output or value differs.
EQUAL, FAILED, DIFFERS = 0, 1, 3


def records(job_dir: str | Path, size: int) -> dict[int, dict[int, dict[str, Any]]]:
    """``{call number: {rank: record}}`` of the run at *size* ranks, as far as each rank got."""
    found: dict[int, dict[int, dict[str, Any]]] = {}
    out = layout.output_dir(job_dir, size)
    for path in sorted(out.glob(layout.RANK_RECORDS.format(rank="*"))):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                found.setdefault(record["number"], {})[record["rank"]] = record
    return found


def cells_text(meta: dict[str, Any], found: dict[int, dict[int, dict[str, Any]]]) -> str:
    """Every cell's output of the run as ``%%px`` shows it, each under its number and label."""
    blocks = []
    for call in meta["calls"]:
        if call["kind"] != "cell" or call["number"] not in found:
            continue
        per_rank = found[call["number"]]
        outputs = [RankOutput(rank, r.get("stdout", ""), r.get("stderr", ""), r.get("result", ""))
                   for rank, r in sorted(per_rank.items()) if r["outcome"] != "skipped"]
        shown = GroupedOutput(outputs).text(errors=False)
        errors = [f"[error:{rank}] {r['error']}" for rank, r in sorted(per_rank.items()) if r.get("error")]
        blocks.append("\n".join([f"[{call['number']}] {call['label']}", *([shown] if shown else []), *errors]))
    return "\n\n".join(blocks) + "\n"


def _values(job_dir: Path, size: int) -> dict[str, dict[str, Any]]:
    """Each value named at export: the session's, the run's, and whether they are equal."""
    session_file = job_dir / layout.SESSION_VALUES
    run_file = layout.output_dir(job_dir, size) / layout.VALUES
    if not session_file.exists():
        return {}
    with np.load(session_file, allow_pickle=False) as session:
        theirs = {k: session[k] for k in session.files}
    ours = {}
    if run_file.exists():
        with np.load(run_file, allow_pickle=False) as run:
            ours = {k: run[k] for k in run.files}
    compared = {}
    for name, expected in theirs.items():
        got = ours.get(name)
        if got is None:
            compared[name] = {"equal": False, "why": "the run did not leave it"}
        elif got.shape != expected.shape:
            compared[name] = {"equal": False, "why": f"shape {got.shape}, the session's {expected.shape}"}
        else:
            same = bool(np.allclose(got, expected, rtol=RTOL, atol=ATOL, equal_nan=True))
            worst = float(np.max(np.abs(got.astype(float) - expected.astype(float)))) if got.size else 0.0
            compared[name] = {"equal": same, "max_abs_difference": worst}
    return compared


def report(job_dir: str | Path, size: int) -> tuple[list[str], int]:
    """Compare the run at *size* ranks with the session: write ``cells.txt`` and ``compare.json``
    beside the run's records; the lines that say it, and :data:`EQUAL`, :data:`FAILED` or
    :data:`DIFFERS`."""
    job_dir = Path(job_dir)
    meta = layout.read_meta(job_dir)
    found = records(job_dir, size)
    out = layout.output_dir(job_dir, size)
    out.mkdir(parents=True, exist_ok=True)
    (out / layout.CELLS).write_text(cells_text(meta, found), encoding="utf-8")
    session_n = meta["world"]["n"]
    same_size = size == session_n
    rows, lines, failed, ended = [], [], [], None
    for call in meta["calls"]:
        number, per_rank = call["number"], found.get(call["number"], {})
        ran = [r for r in per_rank.values() if r["outcome"] != "skipped"]
        bad = sorted(r["rank"] for r in per_rank.values() if r["outcome"] not in ("ok", "skipped"))
        row = {"number": number, "kind": call["kind"], "label": call["label"], "ranks": len(per_rank)}
        if len(per_rank) < size and not bad:
            ended = ended or number
            row["outcome"] = "not run"
        elif bad:
            failed.append(number)
            row.update(outcome="failed", failed_ranks=bad, error=next(r.get("error") for r in ran if r.get("error")))
        else:
            row["outcome"] = "ok"
        if call["kind"] == "cell" and row["outcome"] == "ok":
            session = {int(r): d for r, d in call.get("digests", {}).items()}
            differ = sorted(r["rank"] for r in ran if r["rank"] in session and r["digest"] != session[r["rank"]])
            extra = sorted(r["rank"] for r in ran if r["rank"] not in session)
            row.update(same=not differ, differing_ranks=differ, ranks_not_in_session=extra)
        rows.append(row)
    values = _values(job_dir, size)
    cells_differ = [r["number"] for r in rows if r.get("same") is False]
    values_differ = sorted(name for name, v in values.items() if not v["equal"])
    if failed or ended is not None:
        code = FAILED
    elif values_differ or (same_size and cells_differ):
        code = DIFFERS
    else:
        code = EQUAL
    result = {"np": size, "session_np": session_n, "code": code, "calls": rows, "values": values,
              "cells_differ": cells_differ, "values_differ": values_differ,
              "ended_before": ended, "failed": failed}
    (out / layout.COMPARE).write_text(json.dumps(result, indent=1), encoding="utf-8")
    cells = [r for r in rows if r["kind"] == "cell" and "same" in r]
    lines.append(f"compared with the session ({session_n} rank(s)) at {size} rank(s):")
    for row in rows:
        if row["outcome"] == "failed":
            ranks = ", ".join(map(str, row["failed_ranks"]))
            lines.append(f"  failed: [{row['number']}] {row['label']} on rank(s) {ranks}: {row['error']}")
    if ended is not None:
        lines.append(f"  the job ended before call [{ended}]: the calls from there on did not run")
    if cells:
        verdict = "equal" if not cells_differ else f"{len(cells_differ)} differ: {', '.join(f'[{n}]' for n in cells_differ)}"
        note = "" if same_size else " (at another size than the session's: shown, not required)"
        lines.append(f"  cells' output, rank by rank: {len(cells)} compared, {verdict}{note}")
    for name, v in values.items():
        if v["equal"]:
            said = f"equal (max |difference| {v['max_abs_difference']:.3g})"
        elif "why" in v:
            said = f"DIFFERS: {v['why']}"
        else:
            said = f"DIFFERS: max |difference| {v['max_abs_difference']:.3g}"
        lines.append(f"  value {name}: {said}")
    lines.append(f"  output: {out / layout.CELLS}, {out / layout.COMPARE}")
    return lines, code
