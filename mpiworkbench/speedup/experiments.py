"""The registry of speedup experiments: what each one times, its parameters and variants.

Cheap to import (no MPI, no numba): the CLI builds its options from it and the panel
builds its controls from it. Variants are not typed here: they come from the registries
of what is timed (the wave kernels and halo exchanges, the CG variants and partitions,
the inner-product variants, the benchmark catalog). Each experiment names a factory
``"package.module:make_kernel"`` that the engine-side runner imports lazily; every
factory has the same signature::

    make_kernel(comm, size: int, variant: str, **params) -> kernel

and the kernel has ``run()`` (the timed work), ``verify() -> dict`` (checked once, after
the timed repetitions, ``"ok"`` says whether the answer was right) and ``close()``; an
optional ``prepare()`` runs before each repetition, outside the timed region.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mpiworkbench.backends.registry import ENTRIES, implemented_names
from mpiworkbench.bench.catalog import BENCHMARKS
from mpiworkbench.solvers.cg.variants import PARTITIONS as CG_PARTITIONS, VARIANTS as CG_VARIANTS
from mpiworkbench.solvers.halo import NATIVE_EXCHANGES
from mpiworkbench.solvers.heat import TIMED_EXCHANGES as HEAT_EXCHANGES
from mpiworkbench.solvers.wave.kernels import KERNELS
from mpiworkbench.speedup.collective import BACKENDS as LOOP_BACKENDS
from mpiworkbench.speedup.inner import VARIANTS as INNER_VARIANTS

#: How the problem size follows the rank count: fixed (strong) or grown with it (weak).
SCALINGS = ("strong", "weak")

#: ``"numpy@mpi4py-buf"``: variant ``numpy`` with every message through backend ``mpi4py-buf``.
BACKEND_SEP = "@"
#: The backend every other backend's time is divided by (thesis: C is the reference).
REFERENCE_BACKEND = "c"
#: The backends a solver experiment can be crossed with (the registry's implemented ones,
#: C first). The historic modules are never here: they are syntax and listings only.
SOLVER_BACKENDS = tuple(implemented_names())
#: Backends bound to ``MPI_COMM_WORLD`` (numba-mpi): their points need a world of exactly
#: the point's rank count (the CLI then starts one ``mpiexec`` per count).
WORLD_BOUND_BACKENDS = tuple(e.name for e in ENTRIES if e.target and not e.any_communicator)


def join_backend(base: str, backend: str) -> str:
    """``("numpy", "c")`` → ``"numpy@c"``: a variant crossed with a backend."""
    return f"{base}{BACKEND_SEP}{backend}"


def split_backend(variant: str) -> tuple[str, str | None]:
    """``"numpy@c"`` → ``("numpy", "c")``; a variant without a backend → ``(variant, None)``."""
    base, sep, backend = variant.partition(BACKEND_SEP)
    return (base, backend) if sep else (variant, None)


def split_variant(variant: str, experiment: str, example: str) -> tuple[str, str]:
    """``"numpy/sendrecv"`` → ``("numpy", "sendrecv")``; a clear error for anything else."""
    first, sep, second = variant.partition("/")
    if not sep:
        raise ValueError(f"{experiment} variant must look like {example!r}; got {variant!r}")
    return first, second


@dataclass(frozen=True)
class Parameter:
    """One option of an experiment (besides the swept size and the variant)."""

    name: str
    type: type
    default: Any
    help: str
    small_default: Any = None  # used when MPIWORKBENCH_SMALL=1
    choices: tuple = ()

    def default_for(self, small: bool) -> Any:
        return self.small_default if small and self.small_default is not None else self.default


@dataclass(frozen=True)
class Experiment:
    """What a speedup experiment times and how its problem grows.

    ``size_name`` is the swept problem size (``n`` for the inner product, ``mesh`` for
    the solvers). Under weak scaling the size on ``p`` ranks is
    ``round((size - size_offset) * p ** (1 / weak_dims)) + size_offset`` so the work per
    rank stays constant (a mesh of ``2**k + 1`` points per axis has ``size_offset=1``).
    """

    name: str
    title: str
    factory: str
    size_name: str
    size_help: str
    default_sizes: tuple[int, ...]
    small_sizes: tuple[int, ...]
    variants: tuple[str, ...]
    default_variants: tuple[str, ...]
    timed: str  # one sentence: what the wall-clock time covers
    source: str  # where in the seed documents the experiment comes from
    weak_dims: int = 1
    size_offset: int = 0
    min_size: int = 1
    params: tuple[Parameter, ...] = field(default_factory=tuple)
    #: the variants that can be crossed with a communication backend (``--backend``):
    #: ``base@backend``; empty when the experiment has no backend dimension
    backend_variants: tuple[str, ...] = ()
    default_backend_variants: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()

    def check_variant(self, variant: str) -> None:
        """Raise ValueError naming the choices when *variant* is not one of this experiment's."""
        base, backend = split_backend(variant)
        if backend is None:
            if variant not in self.variants:
                raise ValueError(
                    f"experiment {self.name!r} has no variant {variant!r}; choose from {', '.join(self.variants)}"
                )
            return
        if not self.backends:
            raise ValueError(f"experiment {self.name!r} has no backend dimension; got variant {variant!r}")
        if backend not in self.backends:
            raise ValueError(
                f"experiment {self.name!r} runs on the backends {', '.join(self.backends)}; got {backend!r} "
                f"(the historic modules are syntax tables only, never timed)"
            )
        if base not in self.backend_variants:
            raise ValueError(
                f"experiment {self.name!r} crosses only {', '.join(self.backend_variants)} with a backend; "
                f"got {base!r} in {variant!r}"
            )

    def sizes_for(self, small: bool) -> tuple[int, ...]:
        return self.small_sizes if small else self.default_sizes

    def param(self, name: str) -> Parameter:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"experiment {self.name!r} has no parameter {name!r}; it has {[p.name for p in self.params]}")

    def weak_size(self, size: int, nranks: int) -> int:
        """The problem size on *nranks* ranks that keeps the work per rank of *size* on one."""
        grown = (size - self.size_offset) * nranks ** (1.0 / self.weak_dims)
        return int(round(grown)) + self.size_offset


EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get(name: str) -> Experiment:
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"unknown speedup experiment {name!r}; choose one of {', '.join(EXPERIMENTS)}") from None


def names() -> list[str]:
    return list(EXPERIMENTS)


register(
    Experiment(
        name="inner",
        title="Inner product of two vectors (thesis §2.4)",
        factory="mpiworkbench.speedup.inner:make_kernel",
        size_name="n",
        size_help="global vector length (the thesis uses 2**18 = 262144)",
        default_sizes=(2**18,),
        small_sizes=(2**16,),
        variants=INNER_VARIANTS,
        default_variants=("c", "numpy"),
        timed="`loops` times: the local dot product of each rank's slice, then Reduce(SUM) to rank 0",
        source="thesis §2.4, Table 2.1, Figs. 2.1-2.2",
        weak_dims=1,
        min_size=1,
        params=(
            Parameter("loops", int, 200, "dot products + reductions per timed repetition", small_default=50),
        ),
    )
)

register(
    Experiment(
        name="wave",
        title="3-D wave equation, time stepping (thesis §6.1)",
        factory="mpiworkbench.speedup.wave:make_kernel",
        size_name="mesh",
        size_help="mesh points per axis (the thesis uses 129 and 257)",
        default_sizes=(65,),
        small_sizes=(33,),
        # not numba-mpi: it has no communicator argument, so it cannot run on the sub-communicators
        variants=tuple(f"{k}/{e}" for k in KERNELS for e in NATIVE_EXCHANGES),
        default_variants=("numpy/sendrecv",),
        timed="`steps` time steps of the leapfrog scheme, including every halo exchange",
        source="thesis §6.1.4, Figs. 6.2-6.5",
        weak_dims=3,
        size_offset=1,
        min_size=3,
        params=(Parameter("steps", int, 40, "time steps per timed repetition", small_default=10),),
        # with --backend: the update kernel, every halo message through that backend
        # (the exchange 'backend:<name>', the same packed pattern in every module)
        backend_variants=KERNELS,
        default_backend_variants=("numpy",),
        backends=SOLVER_BACKENDS,
    )
)

register(
    Experiment(
        name="cg",
        title="Conjugate gradients on the 2-D Poisson matrix (thesis §6.2)",
        factory="mpiworkbench.speedup.cg:make_kernel",
        size_name="mesh",
        size_help="interior mesh points per axis N (N**2 unknowns; the thesis's 1025 and 2049 meshes have 1023 and 2047)",
        default_sizes=(127,),
        small_sizes=(63,),
        variants=tuple(f"{v}/{p}" for v in CG_VARIANTS for p in CG_PARTITIONS),
        default_variants=("classic/rows",),
        timed="a whole solve from scratch to `tol` (the thesis criterion rho_k/rho_0 <= tol); set-up untimed",
        source="thesis §6.2.3, Figs. 6.10-6.13",
        weak_dims=2,
        size_offset=-1,
        min_size=1,
        params=(Parameter("tol", float, 1e-8, "stopping tolerance on rho_k/rho_0 (thesis: 1e-8)"),),
        # with --backend: the ghost exchange and every allreduce through that backend
        backend_variants=tuple(f"{v}/{p}" for v in CG_VARIANTS for p in CG_PARTITIONS),
        default_backend_variants=("classic/rows",),
        backends=SOLVER_BACKENDS,
    )
)

register(
    Experiment(
        name="heat",
        title="2-D heat diffusion with halo rows (report 003)",
        factory="mpiworkbench.speedup.heat:make_kernel",
        size_name="grid",
        size_help="grid points per side N (an N x N cylinder; report 003 uses 100, 1000 and 5000)",
        default_sizes=(100, 400),
        small_sizes=(64,),
        variants=HEAT_EXCHANGES,
        default_variants=("nonblocking",),
        timed="`steps` explicit steps: halo-row exchange, update, Allreduce(MAX) of the change",
        source="report 003 §1.2, Table 1, Fig. 1",
        weak_dims=2,
        min_size=3,
        params=(Parameter("steps", int, 200, "time steps per timed repetition", small_default=20),),
        # with --backend: both halo rows (sendrecv) and the Allreduce(MAX) through that backend
        backend_variants=("sendrecv",),
        default_backend_variants=("sendrecv",),
        backends=SOLVER_BACKENDS,
    )
)

register(
    Experiment(
        name="bench",
        title="A micro-benchmark's loop over the ranks (mpiworkbench.bench)",
        factory="mpiworkbench.speedup.collective:make_kernel",
        size_name="bytes",
        size_help="message size in bytes",
        default_sizes=(8, 65536),
        small_sizes=(8, 4096),
        # the benchmarks that run on any rank count, down to one
        variants=tuple(name for name, bench in BENCHMARKS.items() if bench.min_ranks == 1),
        default_variants=("allreduce",),
        timed="`iterations` back-to-back calls of the benchmark's loop (mpiworkbench.bench, block mode)",
        source="thesis ch. 5; report 003 §3",
        weak_dims=1,
        min_size=8,
        params=(
            Parameter("iterations", int, 200, "calls per timed repetition", small_default=50),
            Parameter("backend", str, "mpi4py-buf", "communication backend of the loop",
                      choices=LOOP_BACKENDS),
        ),
    )
)
