"""Thesis §2.4: the inner product of two distributed vectors, in C and in Python.

Rank ``r`` of ``p`` holds the slices ``vs1``, ``vs2`` of the global vectors ``v1 = 1``
and ``v2[i] = i`` (an uneven split when ``p`` does not divide ``n``), computes its local
inner product and reduces the partial sums to rank 0. The exact answer is
``n (n - 1) / 2``, an integer below 2**53 for every length used here, so every variant
and every rank count must produce it bit for bit.

Variants
--------
``c``             the loop and ``MPI_Reduce`` in C (``inner.c``), the thesis's C version
``numpy``         ``numpy.inner`` + ``comm.Reduce`` on one-element arrays (buffer API),
                  the thesis's pypar + NumPy version with mpi4py
``numpy-pickle``  ``numpy.inner`` + ``comm.reduce`` on a Python float (pickled objects)
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from mpiworkbench.core import cbuild, mpi
VARIANTS = ("c", "numpy", "numpy-pickle")


def local_range(n: int, rank: int, size: int) -> tuple[int, int]:
    """Half-open index range of rank *rank*'s slice; the first ``n % size`` ranks get one more."""
    base, extra = divmod(n, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def exact_inner(n: int) -> float:
    """``sum(1 * i for i in range(n))``."""
    return float(n * (n - 1) // 2)


def _c_library() -> ctypes.CDLL:
    lib = cbuild.load("mwb_inner", [Path(__file__).with_name("inner.c")], mpi=True)
    dbl = ctypes.POINTER(ctypes.c_double)
    lib.mwb_inner_reduce.restype = ctypes.c_double
    lib.mwb_inner_reduce.argtypes = [dbl, dbl, ctypes.c_long, ctypes.c_long, ctypes.c_int]
    return lib


class InnerProduct:
    """The timed kernel: ``loops`` local inner products, each followed by a reduction."""

    def __init__(self, comm, n: int, variant: str = "numpy", loops: int = 200):
        self.comm = comm
        self.n, self.variant, self.loops = int(n), variant, int(loops)
        self.result: float | None = None
        start, stop = local_range(self.n, comm.rank, comm.size)
        self.vs1 = np.ones(stop - start)
        self.vs2 = np.arange(start, stop, dtype=np.float64)
        self._run = {"c": self._run_c, "numpy": self._run_numpy, "numpy-pickle": self._run_pickle}[variant]
        if variant == "c":
            self._lib = _c_library()
            self._fcomm = comm.py2f()

    def _run_c(self) -> float:
        dbl = ctypes.POINTER(ctypes.c_double)
        return self._lib.mwb_inner_reduce(
            self.vs1.ctypes.data_as(dbl), self.vs2.ctypes.data_as(dbl), self.vs1.size, self.loops, self._fcomm
        )

    def _run_numpy(self) -> float:
        MPI = mpi.MPI()
        res_local = np.zeros(1)
        res = np.zeros(1)
        for _ in range(self.loops):
            res_local[0] = np.inner(self.vs1, self.vs2)
            self.comm.Reduce(res_local, res, op=MPI.SUM, root=0)
        return float(res[0])

    def _run_pickle(self) -> float:
        MPI = mpi.MPI()
        res = 0.0
        for _ in range(self.loops):
            res = self.comm.reduce(float(np.inner(self.vs1, self.vs2)), op=MPI.SUM, root=0)
        return res if res is not None else 0.0

    def run(self) -> None:
        self.result = self._run()

    def verify(self) -> dict:
        """On rank 0: the reduced value against the exact one (must match bit for bit)."""
        if self.comm.rank != 0:
            return {}
        expected = exact_inner(self.n)
        return {"value": self.result, "expected": expected, "ok": self.result == expected}

    def close(self) -> None:
        self.vs1 = self.vs2 = None


def make_kernel(comm, size: int, variant: str, loops: int = 200) -> InnerProduct:
    """Registry factory (see :mod:`mpiworkbench.speedup.experiments`)."""
    if variant not in VARIANTS:
        raise ValueError(f"inner product variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    if size < comm.size:
        raise ValueError(
            f"vector length n must be at least the number of ranks; got n={size} on {comm.size} ranks"
        )
    if loops < 1:
        raise ValueError(f"loops must be at least 1; got {loops}")
    return InnerProduct(comm, size, variant, loops)
