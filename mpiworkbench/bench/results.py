"""Tidy results: JSON (method, environment, rows, fit, overheads) and CSV, written per size.

A results document is plain data, so an interrupted sweep keeps every size it finished,
and saved runs can be reloaded and overlaid in the notebook.

MPI implementations (:mod:`mpiworkbench.core.implementations`). Every row names the one it
ran under (``mpi``, its registered name); ``environments`` maps each implementation's name to
its environment record (library and ``library_version`` included). ``environment`` and ``fit``
are those of the first (or only) implementation, as in a document of one; ``fit_by_mpi`` holds
the Table 5.1 fit of every implementation (``{mpi: {backend: fit}}``) and ``overhead_vs_c``
compares every row with the C row of its own implementation. A document of several
(:func:`side_by_side`, ``bench … --mpi mpich,openmpi``) also lists them in ``mpis`` and
the ones whose job failed, with why, in ``failed``.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

from mpiworkbench.bench.buffers import Buffers
from mpiworkbench.bench.fit import overhead_vs_c, pingpong_fits
from mpiworkbench.core import jsonfile

ROW_FIELDS = (
    "run_id", "benchmark", "backend", "size", "nprocs", "iterations", "warmup", "capped", "mode",
    "thread_level", "repeats", "launches", "t_us", "t_avg_us", "t_min_us", "t_max_us", "throughput_MBps",
    "throughput_def", "flagged", "time", "mpi",
)
#: Environment fields repeated on every CSV row (so a CSV alone still says where it came from).
CSV_ENV_FIELDS = ("mpi_library", "np", "cores_available", "foreign_load_cores", "oversubscribed")


def document(run) -> dict:
    """The results document of a :class:`~mpiworkbench.bench.harness.BenchRun` so far."""
    return build(run.bench.name, run.run_id, run.policy.describe(), run.environment, run.rows,
                 run.skipped, Buffers.describe(), complete=run.done)


def build(benchmark: str, run_id: str, method: dict, env: dict, rows: list[dict],
          skipped: dict, buffers: str, complete: bool, environments: dict | None = None) -> dict:
    """A results document; *environments* (``{mpi: env}``) defaults to *env*'s own."""
    doc = {
        "benchmark": benchmark,
        "run_id": run_id,
        "complete": complete,
        "method": {**method, "buffers": buffers},
        "environment": env,
        "environments": environments or {env.get("mpi", "unknown"): env},
        "skipped": skipped,
        "rows": rows,
        "overhead_vs_c": overhead_vs_c(rows),
    }
    if benchmark == "pingpong":
        doc["fit_by_mpi"] = {name: pingpong_fits(mine) for name, mine in by_mpi(rows).items()}
        doc["fit"] = pingpong_fits(by_mpi(rows).get(env.get("mpi"), rows))
    return doc


def by_mpi(rows: list[dict]) -> dict[str, list[dict]]:
    """*rows* grouped by the MPI implementation they ran under, in order of appearance."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row.get("mpi", "unknown"), []).append(row)
    return groups


#: Times of a row that become medians when launches are merged.
_TIMES = ("t_us", "t_avg_us", "t_min_us", "t_max_us", "throughput_MBps")


def merge_launches(docs: list[dict], planned: int | None = None) -> dict:
    """One document from the documents of several launches of the same command.

    A launch of an MPI job can run wholly in a slower state of a shared or virtualised
    machine (every program in the launch, C included, steady within the launch; measured:
    docs/measurements.md, Micro-benchmarks). So a row here is the **median
    over launches** of each time (``t_us``, ``t_avg_us``, ...), with every launch's ``t_us``
    in ``t_us_launches`` and their number in ``launches``; the fit and the overheads are
    recomputed from the merged rows. *planned*: how many launches were asked for (the
    document is complete only if all of them finished every size).
    """
    if not docs:
        raise ValueError("no launch documents to merge; run at least one launch")
    first = docs[0]
    run_id = "+".join(d["run_id"] for d in docs)
    groups: dict[tuple, list[dict]] = {}
    for doc in docs:
        for row in doc["rows"]:
            groups.setdefault((row["size"], row["backend"], row.get("mpi")), []).append(row)
    order = {(r["size"], r["backend"], r.get("mpi")): i for i, r in enumerate(r for d in docs for r in d["rows"])}
    rows = []
    for key in sorted(groups, key=lambda k: (k[0], order[k])):
        group = groups[key]
        row = dict(group[0])
        for field in _TIMES:
            values = [r[field] for r in group if r.get(field) is not None]
            row[field] = statistics.median(values) if values else None
        row.update(run_id=run_id, launches=len(group), t_us_launches=[r["t_us"] for r in group],
                   iterations=min(r["iterations"] for r in group), capped=any(r["capped"] for r in group),
                   flagged=any(r["flagged"] for r in group))
        row.pop("t_us_repeats", None)
        rows.append(row)
    method = {**first["method"], "launches": (
        f"{len(docs)} launches of mpiexec; every time is the median over launches, each launch's t_us in "
        "t_us_launches")}
    skipped = {k: v for d in docs for k, v in d.get("skipped", {}).items()}
    merged = build(first["benchmark"], run_id, method, first["environment"], rows, skipped,
                   first["method"].get("buffers", ""),
                   complete=all(d["complete"] for d in docs) and len(docs) == (planned or len(docs)),
                   environments=first.get("environments"))
    merged["launches"] = [
        {"run_id": d["run_id"], "mpi": d["environment"].get("mpi"), "complete": d["complete"], "rows": d["rows"],
         "foreign_load_cores": d["environment"].get("foreign_load_cores"),
         "warnings": d["environment"].get("warnings", [])}
        for d in docs
    ]
    return merged


def side_by_side(docs: list[dict], failed: dict[str, str] | None = None, planned: int | None = None) -> dict:
    """One document from the documents of several MPI implementations (one each, in order).

    Rows, skipped backends (each reason prefixed by its implementation) and launches are
    concatenated; ``environment`` and ``fit`` are the first implementation's, ``environments``
    and ``fit_by_mpi`` every one's; ``mpis`` lists them and ``failed`` those whose job failed
    (name → why). Complete only if every one of the *planned* implementations is.
    """
    if not docs:
        raise ValueError("no implementation wrote any rows; nothing to put side by side")
    first = docs[0]
    environments = {name: env for d in docs for name, env in d["environments"].items()}
    skipped: dict[str, str] = {}
    for d in docs:
        for backend, why in d["skipped"].items():
            text = f"[{d['environment'].get('mpi')}] {why}"
            skipped[backend] = f"{skipped[backend]}; {text}" if backend in skipped else text
    doc = build(first["benchmark"], "+".join(d["run_id"] for d in docs), first["method"], first["environment"],
                [r for d in docs for r in d["rows"]], skipped, first["method"].get("buffers", ""),
                complete=all(d["complete"] for d in docs) and len(docs) == (planned or len(docs)) and not failed,
                environments=environments)
    doc["mpis"] = list(environments)
    doc["failed"] = dict(failed or {})
    if any("launches" in d for d in docs):
        doc["launches"] = [launch for d in docs for launch in d.get("launches", [])]
    return doc


def write_json(path: str | Path, doc: dict) -> None:
    """Rewrite the JSON document (atomic replace; see :mod:`mpiworkbench.core.jsonfile`)."""
    jsonfile.write_json(path, doc)


def write_csv(path: str | Path, doc: dict) -> None:
    """Rewrite the CSV with every row so far (atomic replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    environments = doc.get("environments", {})
    with tmp.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(ROW_FIELDS + CSV_ENV_FIELDS)
        for row in doc["rows"]:
            env = environments.get(row.get("mpi")) or doc.get("environment", {})
            writer.writerow([row.get(f) for f in ROW_FIELDS] + [env.get(f) for f in CSV_ENV_FIELDS])
    tmp.replace(path)


def save(path: str | Path, doc: dict) -> None:
    """Write *doc* as JSON, or as CSV when *path* ends in ``.csv``."""
    if str(path).endswith(".csv"):
        write_csv(path, doc)
    else:
        write_json(path, doc)


def load(path: str | Path) -> dict:
    """Read a JSON results document written by :func:`save`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no results file at {path}; run a benchmark with --json {path} first")
    doc = json.loads(path.read_text())
    if "rows" not in doc:
        raise ValueError(f"{path} is not an mpiworkbench bench results file (no 'rows')")
    return doc


def table_5_1(doc: dict) -> list[dict]:
    """Thesis Table 5.1 for this run: backend, latency µs, bandwidth MB/s, fit residual."""
    return [
        {"backend": backend, "latency_us": f["latency_us"], "bandwidth_MBps": f["bandwidth_MBps"],
         "rms_residual_us": f["rms_residual_us"], "smallest_t_us": f["smallest_t_us"]}
        for backend, f in doc.get("fit", {}).items()
    ]


def format_rows(rows: list[dict]) -> str:
    """Fixed-width text of rows, OSU-style, for the terminal (the backend column as wide as
    its longest name, ``api:mpi4py-obj`` included; an ``mpi`` column first when the rows
    come from several MPI implementations)."""
    several = len(by_mpi(rows)) > 1
    m = max([3] + [len(r.get("mpi", "")) for r in rows]) if several else 0
    w = max([11] + [len(r["backend"]) for r in rows])
    lines = [(f"{'mpi':<{m}} " if several else "")
             + f"{'backend':<{w}} {'size':>9} {'t (us)':>11} {'avg':>10} {'min':>10} {'max':>10} "
             f"{'MB/s':>10} {'iters':>6}"]
    for r in rows:
        mbps = "" if r["throughput_MBps"] is None else f"{r['throughput_MBps']:.1f}"
        lines.append(
            (f"{r.get('mpi', ''):<{m}} " if several else "")
            + f"{r['backend']:<{w}} {r['size']:>9} {r['t_us']:>11.2f} {r['t_avg_us']:>10.2f} "
            f"{r['t_min_us']:>10.2f} {r['t_max_us']:>10.2f} {mbps:>10} {r['iterations']:>6}"
            + ("  (capped)" if r["capped"] else "")
            + (f"  median of {r['repeats']} repeats [{min(r['t_us_repeats']):.2f}-{max(r['t_us_repeats']):.2f}]"
               if r.get("repeats", 1) > 1 and "t_us_repeats" in r else "")
            + (f"  median of {r['launches']} launches [{min(r['t_us_launches']):.2f}-{max(r['t_us_launches']):.2f}]"
               if "t_us_launches" in r else "")
        )
    return "\n".join(lines)
