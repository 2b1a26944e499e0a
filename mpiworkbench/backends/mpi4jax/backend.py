"""``mpi4jax``: every call goes through an mpi4jax primitive on a JAX array.

What the unified interface needs beyond mpi4jax's own calls, done here in plain sight:

* JAX computes in 32 bits unless told otherwise; importing this backend turns on
  ``jax_enable_x64`` so float64, int64 and complex128 data keep their type (a process-wide
  JAX setting, stated in :attr:`Mpi4jax.limits`).
* mpi4jax returns a new array; the result is copied into ``out`` (one copy per receive —
  part of what ``mpi4jax`` measures against ``mpi4py-buf``).
* Each call is wrapped in ``jax.jit`` once per (operation, peer, tag, root, operator) and
  kept: called eagerly, mpi4jax 0.9 rebuilds its primitive on every call (slow; measured:
  docs/measurements.md, Micro-benchmarks), which is not how anyone would use it.
* A receive from ``MPI_PROC_NULL`` is not handed to mpi4jax (its output array would be
  uninitialised memory): it completes at once and leaves ``out`` untouched, as MPI says.
* No ``isend``/``irecv`` (:data:`~mpiworkbench.backends.mpi4jax.UNSUPPORTED`), so neither
  the ``bw``/``bibw`` benchmarks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Sequence

import numpy as np

from mpiworkbench.backends.base import Backend, BackendUnavailableError, Loop, NotSupportedError
from mpiworkbench.backends.mpi4jax import NAME, NONBLOCKING_BENCHMARKS, UNSUPPORTED
from mpiworkbench.core import mpi, onempi


def _bridge_brings_no_second_mpi() -> None:
    """mpi4jax's XLA bridge is a C extension linked with the MPI it was built with: refuse to
    load it where that is not mpi4py's (it would bring a second MPI into the rank,
    :mod:`mpiworkbench.core.onempi`), before it is imported."""
    spec = importlib.util.find_spec("mpi4jax")
    if not spec or not spec.submodule_search_locations:
        return  # not installed: the import below says so
    mpi.MPI()  # mpi4py's library first: a bridge that needs it by its name reuses it
    for bridge in Path(list(spec.submodule_search_locations)[0]).glob("_src/xla_bridge/mpi_xla_bridge*.so"):
        try:
            onempi.check_part(str(bridge), "mpi4jax's XLA bridge")
        except onempi.TwoMPIs as exc:
            raise BackendUnavailableError(
                f"backend 'mpi4jax' is unavailable under this MPI library: {exc}; build mpi4jax with this "
                "MPI's compiler (MPI4JAX_BUILD_MPICC=$(command -v mpicc) pip install --no-binary mpi4jax mpi4jax)"
            ) from exc


_bridge_brings_no_second_mpi()
try:
    import jax
    import jax.numpy as jnp
    import mpi4jax
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise BackendUnavailableError(
        f"backend 'mpi4jax' is unavailable here: {exc}; to use it: make install-mpi4jax "
        "(pip install 'mpiworkbench[mpi4jax]', then mpi4jax built with --no-build-isolation)"
    ) from exc
except RuntimeError as exc:  # mpi4jax's own check: its bridge was built for another MPI's ABI
    raise BackendUnavailableError(
        "backend 'mpi4jax' is unavailable under this MPI library: its XLA bridge is compiled "
        "against the venv's MPICH (make install-mpi4jax) and refuses another ABI "
        f"({' '.join(str(exc).split())[:200]}); run it under mpich or impi (MPICH's ABI)"
    ) from exc

onempi.check("after importing mpi4jax")  # its XLA bridge links an MPI library of its own build
jax.config.update("jax_enable_x64", True)


class Mpi4jax(Backend):
    name = NAME
    summary = "mpi4jax: MPI primitives on JAX arrays (usable inside jax.jit); results are new arrays"
    unsupported = dict(UNSUPPORTED)
    limits = (
        "no *v collectives (equal counts only)",
        "turns on jax_enable_x64 in the process (64-bit dtypes keep their type)",
        "every receive copies mpi4jax's new result array into out",
    )
    objects = False

    def __init__(self, comm=None):
        super().__init__(comm)
        MPI = mpi.MPI()
        self._ops = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
        self._jitted: dict[tuple, object] = {}

    def _call(self, function, *arrays, **static):
        """``mpi4jax.<function>(*arrays, **static, comm=…)`` compiled once per *static* and kept."""
        key = (function, *((k, id(v) if k == "op" else v) for k, v in sorted(static.items())))  # MPI.Op: unhashable
        compiled = self._jitted.get(key)
        if compiled is None:
            call, comm = getattr(mpi4jax, function), self.comm
            compiled = self._jitted[key] = jax.jit(lambda *xs: call(*xs, **static, comm=comm))
        return compiled(*(jnp.asarray(x) for x in arrays))

    @classmethod
    def make_loop(cls, benchmark: str, comm, mode: str = "osu", window: int = 64) -> Loop:
        """The unified-interface loop (:meth:`Backend.make_loop`); ``bw``/``bibw`` refused up front."""
        if benchmark in NONBLOCKING_BENCHMARKS:
            raise NotSupportedError(NAME, f"{benchmark} needs isend/irecv: {UNSUPPORTED['isend']}")
        return super().make_loop(benchmark, comm, mode, window)

    def _op(self, op: str):
        try:
            return self._ops[op]
        except KeyError:
            raise ValueError(f"unknown reduction op {op!r}; use one of {sorted(self._ops)}") from None

    def _no_counts(self, counts) -> None:
        if counts is not None:
            raise NotSupportedError(NAME, UNSUPPORTED["counts"])

    @staticmethod
    def _into(out, result):
        """Copy mpi4jax's *result* into *out* (a new array when *out* is None)."""
        if out is None:
            return np.array(result)
        out[...] = np.asarray(result).reshape(np.shape(out))
        return out

    def barrier(self) -> None:
        self._call("barrier")

    # -- point to point ----------------------------------------------------------------
    def send(self, data, dest, tag=0):
        if dest != self.PROC_NULL:
            self._call("send", data, dest=dest, tag=tag)

    def recv(self, out=None, source=None, tag=None):
        if out is None:
            raise ValueError(f"{self.name} recv needs out= (a pre-allocated array of the message's shape and dtype)")
        if source == self.PROC_NULL:
            return out
        got = self._call("recv", out, source=self.ANY_SOURCE if source is None else source,
                         tag=self.ANY_TAG if tag is None else tag)
        return self._into(out, got)

    def sendrecv(self, data, dest, out=None, source=None, sendtag=0, recvtag=None):
        if out is None:
            raise ValueError(f"{self.name} sendrecv needs out= (a pre-allocated receive array)")
        source = self.ANY_SOURCE if source is None else source
        recvtag = self.ANY_TAG if recvtag is None else recvtag
        if source == self.PROC_NULL:  # only the send half remains
            self.send(data, dest, sendtag)
            return out
        if dest == self.PROC_NULL:
            return self.recv(out, source, recvtag)
        got = self._call("sendrecv", data, out, source=source, dest=dest, sendtag=sendtag, recvtag=recvtag)
        return self._into(out, got)

    def isend(self, data, dest, tag=0):
        raise self._unsupported(UNSUPPORTED["isend"])

    def irecv(self, out=None, source=None, tag=None):
        raise self._unsupported(UNSUPPORTED["irecv"])

    def wait(self, request):
        raise self._unsupported(UNSUPPORTED["isend"])

    def waitall(self, requests):
        raise self._unsupported(UNSUPPORTED["isend"])

    # -- collectives -------------------------------------------------------------------
    def bcast(self, data, root=0):
        return self._into(data, self._call("bcast", data, root=root))

    def reduce(self, data, op="sum", root=0, out=None):
        got = self._call("reduce", data, op=self._op(op), root=root)
        if self.rank != root:
            return None
        return self._into(out, got)

    def allreduce(self, data, op="sum", out=None):
        return self._into(out, self._call("allreduce", data, op=self._op(op)))

    def gather(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        got = self._call("gather", data, root=root)
        return self._into(out, got) if self.rank == root else None

    def allgather(self, data, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        return self._into(out, self._call("allgather", data))

    def scatter(self, data, root=0, out=None, counts: Sequence[int] | None = None):
        self._no_counts(counts)
        if out is None:
            raise ValueError(f"{self.name} scatter needs out= on every rank (this rank's receive array)")
        send = jnp.asarray(data).reshape((self.size, *np.shape(out))) if self.rank == root else jnp.asarray(out)
        return self._into(out, self._call("scatter", send, root=root))

    def alltoall(self, data, out=None):
        data = jnp.asarray(data)
        return self._into(out, self._call("alltoall", data.reshape((self.size, -1))).reshape(data.shape))
