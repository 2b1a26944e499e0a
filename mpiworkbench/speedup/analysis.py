"""Pure analysis of speedup measurements: medians, spread, speedup, efficiency, tables.

No MPI here. A :class:`SpeedupResult` holds the raw per-repetition times of every
point; everything derived (median, quartiles, speedup, efficiency) is recomputed from
them, so a result saved to JSON and reloaded gives the same numbers.

Definitions (thesis §2.4, §6.1.4: "the measurements on a single core as the reference"):

* strong scaling, same problem on ``p`` ranks: ``S(p) = T(p_ref) * p_ref / T(p)`` with
  ``p_ref`` the smallest rank count measured (normally 1, then ``S = T(1) / T(p)``);
  efficiency ``E(p) = S(p) / p``.
* weak scaling, problem grown with ``p``: efficiency ``E(p) = T(p_ref) / T(p)``, scaled
  speedup ``S(p) = p * E(p)``.

Times are medians over the repetitions; the spread is the min/max and the quartiles.

Points crossed with a communication backend (variant ``base@backend``, ``--backend``) also
get ``ratio_to_c``: their median over the median of the same base variant, size and rank
count on the C backend (thesis Figs. 6.2-6.5: C "8 to 10 times" faster), and
``ratio_to_best_c``: over the fastest C-backend point of that size and rank count (for the
wave solver, C messages *and* the C update kernel when both were measured). A point whose
kernel counts its work (``flops``) gets ``flop_s`` = flops / median and ``flop_s_best`` =
flops / min (report 003 prints the best of its runs).

MPI implementations (:mod:`mpiworkbench.core.implementations`): every point names the one
its ranks ran under (``mpi``) and ``environments`` maps each one's name to its library
record (``library_version`` included). A result of several (``speedup … --mpi
mpich,openmpi``) keeps each implementation's points a curve of their own (the variant named
``"numpy (openmpi)"``), speedups against its own smallest rank count and ratios to its own C;
``failed`` names the implementations whose job failed, with why.

Traced points (``SpeedupSpec(trace=True)``, ``speedup … --trace``) hold ``pop``: the POP
factors of one traced run of the point (:func:`mpiworkbench.trace.efficiency.efficiency`:
``load_balance``, ``communication``, ``serialisation``, ``transfer``, ``parallel``, with
``runtime``, ``ideal_runtime``, ``useful`` per rank, ``nranks`` and ``dropped`` events), and
across each strong-scaling series, against its smallest traced rank count,
``computation_scalability`` and ``global_efficiency``
(:func:`mpiworkbench.trace.efficiency.scaling_of`; ``None`` under weak scaling, where the work
grows with the ranks); :mod:`~mpiworkbench.speedup.factors` tabulates them. The traces
themselves stay out of the JSON: ``SpeedupResult.traces``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mpiworkbench.core.machine import PLACEMENTS
from mpiworkbench.speedup.experiments import REFERENCE_BACKEND
from mpiworkbench.trace.efficiency import Efficiency, scaling_of

FORMAT_VERSION = 1
#: The key of a traced point's Trace in the record rank 0 returns (``SpeedupResult.add`` moves
#: it to :attr:`SpeedupResult.traces`).
TRACE_KEY = "gathered_trace"
_EFFICIENCY_FIELDS = tuple(Efficiency.__dataclass_fields__)


def summarise(times: list[float]) -> dict[str, float]:
    """Median, quartiles, min and max of one point's repetition times."""
    if not times:
        raise ValueError("a point needs at least one timed repetition; got none")
    t = np.asarray(times, dtype=float)
    q1, median, q3 = np.percentile(t, [25, 50, 75])
    return {"median": float(median), "q1": float(q1), "q3": float(q3), "min": float(t.min()), "max": float(t.max())}


def place_of(point: dict[str, Any]) -> str:
    """The point's placement (results saved before placements existed: the default)."""
    return point.get("place", PLACEMENTS[0])


def placed(name: str, point: dict[str, Any]) -> str:
    """*name* (a variant) marked with the point's placement unless it is the default
    (``"numpy [spread]"``): points placed otherwise are another curve."""
    return name if place_of(point) == PLACEMENTS[0] else f"{name} [{place_of(point)}]"


def nodes(point: dict[str, Any]) -> int:
    """How many hosts the point's active ranks ran on (its recorded placement; 1 if unknown)."""
    hosts = (point.get("placement") or {}).get("hosts") or {}
    return max(1, sum(1 for h in hosts.values() if h.get("active_ranks")))


def where_text(point: dict[str, Any]) -> str:
    """``"on 2 rank(s)"``, and ``" over 2 nodes"`` when its ranks spanned several (progress lines)."""
    spans = nodes(point)
    return f"on {point['nranks']} rank(s)" + (f" over {spans} nodes" if spans > 1 else "")


def series_key(point: dict[str, Any], several_mpi: bool = False) -> tuple[str, int]:
    """Points of one curve share the variant, the (base) problem size and the placement
    (the variant named by :func:`placed`), and with *several_mpi* the MPI implementation."""
    return curve(point["variant"], point, several_mpi), int(point.get("base_size", point["size"]))


def curve(name: str, point: dict[str, Any], several_mpi: bool = False) -> str:
    """*name* marked by :func:`placed`, and with *several_mpi* by the point's MPI
    implementation (``"numpy (openmpi)"``)."""
    name = placed(name, point)
    return f"{name} ({point.get('mpi', 'unknown')})" if several_mpi else name


@dataclass
class SpeedupResult:
    """The measurements of one experiment, and everything derived from them."""

    experiment: str
    scaling: str = "strong"
    params: dict[str, Any] = field(default_factory=dict)
    points: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    #: MPI implementation name -> its library record (:func:`mpiworkbench.core.machine.mpi_library`).
    environments: dict[str, Any] = field(default_factory=dict)
    #: MPI implementation name -> why its job failed (``speedup … --mpi`` of several).
    failed: dict[str, str] = field(default_factory=dict)
    #: Index in :attr:`points` -> the Trace of that traced point (this session only; not in the JSON).
    traces: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)

    def add(self, record: dict[str, Any]) -> dict[str, Any]:
        """Add one measured point (as returned by the runner) and re-derive every series."""
        record = dict(record)
        trace = record.pop(TRACE_KEY, None)
        if trace is not None:
            self.traces[len(self.points)] = trace
        self.points.append(record)
        self.derive()
        return self.points[-1]

    def derive(self) -> None:
        for pts in self.series().values():
            for p in pts:
                p.update(summarise(p["times"]))
            ref = min(pts, key=lambda p: int(p["nranks"]))
            p_ref, t_ref = int(ref["nranks"]), ref["median"]
            for p in pts:
                n, t = int(p["nranks"]), p["median"]
                p["reference_nranks"] = p_ref
                if self.scaling == "weak":
                    eff = t_ref / t if t > 0 else math.nan
                    p["efficiency"] = eff
                    p["speedup"] = n / p_ref * eff
                    p["speedup_low"] = n / p_ref * t_ref / p["q3"] if p["q3"] > 0 else math.nan
                    p["speedup_high"] = n / p_ref * t_ref / p["q1"] if p["q1"] > 0 else math.nan
                else:
                    p["speedup"] = t_ref * p_ref / t if t > 0 else math.nan
                    p["efficiency"] = p["speedup"] / n
                    p["speedup_low"] = t_ref * p_ref / p["q3"] if p["q3"] > 0 else math.nan
                    p["speedup_high"] = t_ref * p_ref / p["q1"] if p["q1"] > 0 else math.nan
            self._derive_scalability([p for p in pts if p.get("pop")])

        self._derive_ratios()

    def _derive_scalability(self, traced: list[dict[str, Any]]) -> None:
        """Computation scalability and global efficiency of a series' traced points, against
        its smallest rank count (strong scaling only: weak scaling grows the work)."""
        if not traced:
            return
        if self.scaling == "weak":
            for p in traced:
                p["pop"].update(computation_scalability=None, global_efficiency=None)
            return
        rows = [Efficiency(**{k: p["pop"][k] for k in _EFFICIENCY_FIELDS}) for p in traced]
        for p, row in zip(traced, scaling_of(rows, reference=0)):
            p["pop"].update(computation_scalability=row["computation_scalability"],
                            global_efficiency=row["global_efficiency"])

    def _derive_ratios(self) -> None:
        c_points: dict[tuple, dict[str, Any]] = {}
        best_c: dict[tuple, float] = {}
        for p in self.points:
            if p.get("flops"):
                p["flop_s"] = p["flops"] / p["median"] if p["median"] > 0 else math.nan
                p["flop_s_best"] = p["flops"] / p["min"] if p["min"] > 0 else math.nan
            if p.get("backend") == REFERENCE_BACKEND:
                where = (int(p.get("base_size", p["size"])), int(p["nranks"]), place_of(p), p.get("mpi"))
                c_points[(p["base_variant"], *where)] = p
                best_c[where] = min(best_c.get(where, math.inf), p["median"])
        for p in self.points:
            if p.get("backend") is None:
                continue
            where = (int(p.get("base_size", p["size"])), int(p["nranks"]), place_of(p), p.get("mpi"))
            ref = c_points.get((p["base_variant"], *where))
            p["ratio_to_c"] = p["median"] / ref["median"] if ref and ref["median"] > 0 else None
            best = best_c.get(where)
            p["ratio_to_best_c"] = p["median"] / best if best else None

    def series(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """Points grouped by (variant, base size), each list sorted by rank count."""
        out: dict[tuple[str, int], list[dict[str, Any]]] = {}
        several = self.several_mpi
        for p in self.points:
            out.setdefault(series_key(p, several), []).append(p)
        return {k: sorted(v, key=lambda p: int(p["nranks"])) for k, v in out.items()}

    @property
    def several_mpi(self) -> bool:
        """Whether the points ran under more than one MPI implementation (then each one's
        points are curves of their own)."""
        return len({p["mpi"] for p in self.points if p.get("mpi")}) > 1

    @property
    def cores(self) -> int | None:
        """Cores of the machine(s) the points ran on (from the first point's placement)."""
        for p in self.points:
            if "placement" in p:
                return int(p["placement"]["cores"])
        return self.machine.get("cores")

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "experiment": self.experiment,
            "scaling": self.scaling,
            "label": self.label,
            "params": self.params,
            "machine": self.machine,
            "environments": self.environments,
            "failed": self.failed,
            "points": self.points,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SpeedupResult:
        if data.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"not a speedup result of format {FORMAT_VERSION}: got format {data.get('format')!r}; "
                "was it written by `mpiworkbench speedup … --json`?"
            )
        result = cls(
            experiment=data["experiment"],
            scaling=data.get("scaling", "strong"),
            params=data.get("params", {}),
            points=[dict(p) for p in data.get("points", [])],
            machine=data.get("machine", {}),
            label=data.get("label", ""),
            environments=data.get("environments", {}),
            failed=data.get("failed", {}),
        )
        result.derive()
        return result


def to_json(result: SpeedupResult) -> str:
    """*result* as JSON text (non-finite numbers become ``null``)."""
    return json.dumps(_jsonable(result.to_dict()), indent=2) + "\n"


def save(result: SpeedupResult, path: str | Path) -> Path:
    """Write *result* as JSON (atomically) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(to_json(result))
    tmp.replace(path)
    return path


def load(path: str | Path) -> SpeedupResult:
    """Read a result written by :func:`save` (or the CLI's ``--json``)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no speedup result at {path}; run an experiment with --json {path} first")
    result = SpeedupResult.from_dict(json.loads(path.read_text()))
    if not result.label:
        result.label = path.stem
    return result


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def table_rows(result: SpeedupResult) -> list[dict[str, Any]]:
    """One row per rank count, one column group per series: the layout of thesis Table 2.1."""
    series = result.series()
    counts = sorted({int(p["nranks"]) for p in result.points})
    rows = []
    for n in counts:
        row: dict[str, Any] = {"nranks": n, "oversubscribed": False}
        for key, pts in series.items():
            match = [p for p in pts if int(p["nranks"]) == n]
            if match:
                p = match[0]
                row[key] = p
                row["oversubscribed"] |= bool(p.get("oversubscribed"))
        rows.append(row)
    return rows


def series_name(key: tuple[str, int], size_name: str) -> str:
    """``"numpy n=4096"``: a series of :meth:`SpeedupResult.series` in the tables."""
    variant, size = key
    return f"{variant} {size_name}={size}"


def format_table(result: SpeedupResult, size_name: str = "size") -> str:
    """Plain-text table like thesis Table 2.1: wall-clock median (spread) and speed-up."""
    series = list(result.series())
    crossed, flops, spans = _crossed(result), _counted(result), spans_nodes(result)
    extra = (["x C"] if crossed else []) + (["GFLOP/s"] if flops else []) + (["nodes"] if spans else [])
    header = ["numproc"]
    for key in series:
        name = series_name(key, size_name)
        header += [f"{name} time/s", "[min, max]", "speed-up", "effic."] + extra
    lines = [header]
    for row, points in _point_cells(result, series):
        mark = " *" if row["oversubscribed"] else ""
        cells = [f"{row['nranks']}{mark}"]
        for point in points:
            cells += point or ["-"] * (4 + len(extra))
        lines.append(cells)
    note = oversubscribed_note(result) if any(r["oversubscribed"] for r in table_rows(result)) else ""
    return aligned(lines) + note + busy_note(result, "\n")


def aligned(lines: list[list[str]]) -> str:
    """Rows of cells as text, every column right-aligned (the header row first): the text tables."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines)


def oversubscribed_note(result: SpeedupResult) -> str:
    """The line under a text table whose ``*`` marks oversubscribed rank counts."""
    return f"\n* oversubscribed: more active ranks than the {result.cores} core(s) of the host"


def _point_cells(result: SpeedupResult, series: list[tuple[str, int]]):
    """The rows of both tables (:func:`format_table`, :func:`format_html`): per row of
    :func:`table_rows`, the row and per series of *series* its point's cells as text — time
    (median), [min, max], speed-up, efficiency, then time / C, GFLOP/s and nodes where the
    result has them — or ``None`` where the series has no point at that rank count."""
    crossed, flops, spans = _crossed(result), _counted(result), spans_nodes(result)
    for row in table_rows(result):
        points = []
        for key in series:
            p = row.get(key)
            if p is None:
                points.append(None)
                continue
            is_ref = int(p["nranks"]) == int(p["reference_nranks"])
            points.append([
                f"{p['median']:.4g}",
                f"[{p['min']:.3g}, {p['max']:.3g}]",
                "N/A" if is_ref else f"{p['speedup']:.3f}",
                f"{p['efficiency']:.0%}",
            ] + ([_ratio_text(p.get("ratio_to_c"))] if crossed else []) + ([_gflops(p)] if flops else []) + (
                [str(nodes(p))] if spans else []))
        yield row, points


def _crossed(result: SpeedupResult) -> bool:
    """Whether the points were crossed with backends (then the tables show the ratio to C)."""
    return any(p.get("backend") for p in result.points)


def spans_nodes(result: SpeedupResult) -> bool:
    """Whether some point's ranks ran on several hosts (then the tables say on how many)."""
    return any(nodes(p) > 1 for p in result.points)


def _counted(result: SpeedupResult) -> bool:
    """Whether the kernels counted their work (then the tables show FLOP/s, report 003 Table 1)."""
    return any(p.get("flop_s") for p in result.points)


def _gflops(p: dict[str, Any]) -> str:
    value = p.get("flop_s")
    return "-" if value is None or not math.isfinite(value) else f"{value / 1e9:.3g}"


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None or not math.isfinite(ratio) else f"{ratio:.2f}"


def ratio_rows(result: SpeedupResult) -> list[dict[str, Any]]:
    """The ratios to C of a backend-crossed result: one row per (base variant, size, ranks),
    one column per backend (``None`` where a point is missing), C first as measured."""
    backends = list(dict.fromkeys(p["backend"] for p in result.points if p.get("backend")))
    rows: dict[tuple, dict[str, Any]] = {}
    several = result.several_mpi
    for p in result.points:
        if not p.get("backend"):
            continue
        key = (curve(p["base_variant"], p, several), int(p.get("base_size", p["size"])), int(p["nranks"]))
        row = rows.setdefault(key, {"variant": key[0], "size": key[1], "nranks": key[2],
                                    "oversubscribed": False, **{b: None for b in backends}})
        row[p["backend"]] = p.get("ratio_to_c")
        row["oversubscribed"] |= bool(p.get("oversubscribed"))
    return [rows[k] for k in sorted(rows, key=lambda k: (k[0], k[1], k[2]))]


def format_ratio_table(result: SpeedupResult, size_name: str = "size", markdown: bool = False) -> str:
    """The ratios of :func:`ratio_rows` as text (``markdown=True``: a Markdown table)."""
    rows = ratio_rows(result)
    if not rows:
        return ""
    backends = [k for k in rows[0] if k not in ("variant", "size", "nranks", "oversubscribed")]
    header = ["variant", size_name, "ranks", *(f"{b} / C" for b in backends)]
    lines = [header] + [
        [r["variant"], str(r["size"]), f"{r['nranks']}{' *' if r['oversubscribed'] else ''}",
         *(_ratio_text(r[b]) for b in backends)]
        for r in rows
    ]
    if markdown:
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(line) + " |" for line in lines[1:]]
        return "\n".join(out)
    return aligned(lines)


def busy_note(result: SpeedupResult, prefix: str = "") -> str:
    """A warning when the host was busier than its cores while the points ran, else ``""``."""
    loads = [p["load_average"] for p in result.points if p.get("load_average") is not None]
    cores = result.cores
    if not loads or not cores or max(loads) <= cores:
        return ""
    return (
        f"{prefix}! busy host: load average up to {max(loads):.1f} on {cores} core(s) while measuring; "
        "other processes competed for the cores, so times are inflated and noisy"
    )


def format_html(result: SpeedupResult, size_name: str = "size") -> str:
    """The same table as :func:`format_table`, as HTML for a notebook or widget."""
    series = list(result.series())
    crossed, flops, spans = _crossed(result), _counted(result), spans_nodes(result)
    head = "".join(
        f"<th colspan={3 + crossed + flops + spans}>{series_name(k, size_name)}</th>" for k in series
    )
    sub = "".join(
        "<th>time/s (median) [min, max]</th><th>speed-up</th><th>efficiency</th>"
        + ("<th>time / C</th>" if crossed else "") + ("<th>GFLOP/s</th>" if flops else "")
        + ("<th>nodes</th>" if spans else "")
        for _ in series
    )
    body = []
    for row, points in _point_cells(result, series):
        style = ' style="color:#b35806"' if row["oversubscribed"] else ""
        cells = [f"<td{style}>{row['nranks']}{' (oversubscribed)' if row['oversubscribed'] else ''}</td>"]
        for point in points:
            if point is None:
                cells.append("<td>-</td>" * (3 + crossed + flops + spans))
                continue
            median, spread, *rest = point  # one cell: the median and its [min, max]
            cells.append(f"<td>{median} {spread}</td>" + "".join(f"<td>{c}</td>" for c in rest))
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = busy_note(result)
    return (
        (f"<p style='color:#b35806'>{note}</p>" if note else "")
        + "<table><thead><tr><th rowspan=2>ranks</th>" + head + "</tr><tr>" + sub + "</tr></thead><tbody>"
        + "".join(body) + "</tbody></table>"
    )
