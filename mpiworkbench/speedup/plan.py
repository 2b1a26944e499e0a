"""Plan the points of a speedup experiment and run them one after another.

The loop (:func:`run_steps`) does not know where the ranks are: it yields each point and
is handed back its record. The CLI runs it through :func:`run_experiment` with
``lambda p: run_point(p, comm)`` (every rank of ``mpiexec`` runs this loop in lockstep);
the notebook's driver (:mod:`mpiworkbench.drivers.speedup`, used by code and the speedup
panel alike) runs :func:`~mpiworkbench.speedup.point.run_point` on the engines of a
``Workbench``. No MPI here.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator

from mpiworkbench.core import machine
from mpiworkbench.speedup import experiments
from mpiworkbench.speedup.analysis import SpeedupResult
from mpiworkbench.speedup.experiments import SCALINGS, join_backend, split_backend


def small_mode() -> bool:
    """Whether ``MPIWORKBENCH_SMALL=1`` asks for small default sizes."""
    return os.environ.get("MPIWORKBENCH_SMALL") == "1"


def parse_int_list(text: str, what: str) -> list[int]:
    """``"1,2,4"`` -> ``[1, 2, 4]``; also accepts ``2**18`` items and ``1-4`` ranges."""
    values: list[int] = []
    for item in str(text).replace(" ", "").split(","):
        if not item:
            continue
        try:
            if "**" in item:
                base, exp = item.split("**")
                values.append(int(base) ** int(exp))
            elif "-" in item[1:]:
                lo, hi = item.split("-", 1)
                values.extend(range(int(lo), int(hi) + 1))
            else:
                values.append(int(item))
        except ValueError:
            raise ValueError(f"{what} must be integers separated by commas (e.g. 1,2,4); got {text!r}") from None
    if not values:
        raise ValueError(f"{what} must list at least one integer; got {text!r}")
    return values


@dataclass
class SpeedupSpec:
    """What to measure: one experiment, its sizes, variants, rank counts and repetitions.

    With ``backends`` (names of :mod:`mpiworkbench.backends`, e.g. ``["c", "mpi4py-buf"]``)
    every variant is crossed with every backend: variant ``numpy`` becomes ``numpy@c``,
    ``numpy@mpi4py-buf``, … (the experiment's ``backend_variants``; default its
    ``default_backend_variants``), and the analysis adds each point's ratio to C.

    ``placements`` (from :data:`~mpiworkbench.core.machine.PLACEMENTS`; default ``packed``)
    says which ranks a point of fewer ranks than the world takes: filling one node first, or
    spread over the nodes; with both, every series is measured both ways (intra- against
    inter-node on a cluster of several hosts).

    ``trace``: every point also runs its timed work once more with the MPI interposer
    recording (:mod:`mpiworkbench.trace.recorder`; untimed, so the times stay the recorder's
    overhead free), and the result gets each point's POP factors (``pop``, see
    :mod:`mpiworkbench.speedup.analysis`): why the efficiency drops, not only that it does.
    """

    experiment: str
    nranks: list[int]
    sizes: list[int] | None = None
    variants: list[str] | None = None
    repeats: int = 5
    warmup: int = 1
    scaling: str = "strong"
    params: dict[str, Any] = field(default_factory=dict)
    backends: list[str] | None = None
    placements: list[str] | None = None
    trace: bool = False

    def _crossed_variants(self, exp) -> tuple[list[str], list[str] | None]:
        """The variants to run, crossed with :attr:`backends` when there are any."""
        if not self.backends:
            return (list(self.variants) if self.variants else list(exp.default_variants)), None
        backends = list(dict.fromkeys(str(b) for b in self.backends))
        if not exp.backends:
            raise ValueError(
                f"experiment {exp.name!r} has no backend dimension; --backend works with "
                f"{', '.join(e.name for e in experiments.EXPERIMENTS.values() if e.backends)}"
            )
        bases = list(dict.fromkeys(split_backend(v)[0] for v in self.variants)) if self.variants else list(
            exp.default_backend_variants
        )
        return [join_backend(v, b) for v in bases for b in backends], backends

    def resolved(self) -> SpeedupSpec:
        """A copy with defaults filled in and every value checked (raises ValueError)."""
        exp = experiments.get(self.experiment)
        small = small_mode()
        sizes = list(self.sizes) if self.sizes else list(exp.sizes_for(small))
        variants, backends = self._crossed_variants(exp)
        nranks = sorted(set(int(n) for n in self.nranks))
        if not nranks or nranks[0] < 1:
            raise ValueError(f"rank counts must be at least 1; got {self.nranks}")
        for v in variants:
            exp.check_variant(v)
        for s in sizes:
            if s < exp.min_size:
                raise ValueError(f"{exp.size_name} must be at least {exp.min_size}; got {s}")
        if self.repeats < 1:
            raise ValueError(f"repetitions must be at least 1; got {self.repeats}")
        if self.warmup < 0:
            raise ValueError(f"warm-up runs must be 0 or more; got {self.warmup}")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}; got {self.scaling!r}")
        params = {}
        known = {p.name: p for p in exp.params}
        for name in self.params:
            if name not in known:
                raise ValueError(f"experiment {exp.name!r} has no parameter {name!r}; it has {', '.join(known)}")
        for name, p in known.items():
            try:
                params[name] = p.type(self.params.get(name, p.default_for(small)))
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a {p.type.__name__}; got {self.params.get(name)!r}") from None
            if p.choices and params[name] not in p.choices:
                raise ValueError(f"{name} must be one of {', '.join(map(str, p.choices))}; got {params[name]!r}")
        placements = [machine.check_placement(p) for p in dict.fromkeys(self.placements or machine.PLACEMENTS[:1])]
        return SpeedupSpec(
            exp.name, nranks, sizes, variants, int(self.repeats), int(self.warmup), self.scaling, params, backends,
            placements, bool(self.trace),
        )

    def world_bound(self) -> list[str]:
        """The backends of this spec that talk only on ``MPI_COMM_WORLD`` (numba-mpi)."""
        return [b for b in self.backends or () if b in experiments.WORLD_BOUND_BACKENDS]


def plan_points(spec: SpeedupSpec) -> list[dict[str, Any]]:
    """The points to run, smallest rank count first within each (size, variant) series."""
    spec = spec.resolved()
    exp = experiments.get(spec.experiment)
    points = []
    for size in spec.sizes:
        for variant in spec.variants:
            base, backend = split_backend(variant)
            for place in spec.placements:
                for n in spec.nranks:
                    actual = exp.weak_size(size, n) if spec.scaling == "weak" else size
                    crossed = {"backend": backend, "base_variant": base} if backend is not None else {}
                    points.append(
                        {
                            **crossed,
                            "experiment": spec.experiment,
                            "variant": variant,
                            "place": place,
                            "nranks": n,
                            "size": actual,
                            "base_size": size,
                            "repeats": spec.repeats,
                            "warmup": spec.warmup,
                            "params": dict(spec.params),
                            **({"trace": True} if spec.trace else {}),
                        }
                    )
    return points


def machine_info() -> dict[str, Any]:
    """Where the client ran (the ranks report their own placement per point); no MPI."""
    facts = machine.local_facts()
    info: dict[str, Any] = {
        "host": facts["host"],
        "python": facts["python"],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "user": machine.user(),
    }
    if facts["load_average"] is not None:
        info["load_average"] = facts["load_average"]
    return info


def begin_experiment(spec: SpeedupSpec, label: str = "") -> tuple[list[dict[str, Any]], SpeedupResult]:
    """The planned points of *spec* and the empty result they are added to (``result.add``)."""
    spec = spec.resolved()
    backends = {"backends": spec.backends} if spec.backends else {}
    result = SpeedupResult(
        experiment=spec.experiment,
        scaling=spec.scaling,
        params={"repeats": spec.repeats, "warmup": spec.warmup, **spec.params, **backends,
                "placements": spec.placements, **({"trace": True} if spec.trace else {})},
        machine=machine_info(),
        label=label,
    )
    return plan_points(spec), result


def run_steps(
    spec: SpeedupSpec,
    on_point: Callable[[SpeedupResult, dict[str, Any], int, int], None] | None = None,
    label: str = "",
    should_stop: Callable[[], bool] = lambda: False,
) -> Generator[dict[str, Any], dict[str, Any], SpeedupResult]:
    """The one loop of an experiment, free of any way of running a point.

    A generator: it yields every planned point, is sent back that point's record, calls
    ``on_point(result, point, i, total)`` and finally returns the result. ``should_stop()``
    is asked before every point; the result then holds the points done. :func:`run_experiment`
    drives it with a plain function (the CLI); the notebook's driver
    (:mod:`mpiworkbench.drivers.speedup`) drives it on the engines, blocking or in the
    background — the same loop either way.
    """
    points, result = begin_experiment(spec, label)
    for i, point in enumerate(points, start=1):
        if should_stop():
            break
        added = result.add((yield point))
        if on_point is not None:
            on_point(result, added, i, len(points))
    return result


def run_experiment(
    spec: SpeedupSpec,
    execute: Callable[[dict[str, Any]], dict[str, Any]],
    on_point: Callable[[SpeedupResult, dict[str, Any], int, int], None] | None = None,
    label: str = "",
) -> SpeedupResult:
    """Run every planned point through ``execute(point) -> record``; call
    ``on_point(result, point, i, total)`` after each (see :func:`run_steps`)."""
    steps = run_steps(spec, on_point, label)
    try:
        point = next(steps)
        while True:
            point = steps.send(execute(point))
    except StopIteration as done:
        return done.value
