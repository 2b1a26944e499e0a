"""Update kernels of the 3-D wave stencil: NumPy slicing, numba, C — the same arithmetic.

Every kernel computes, on a box of a ghosted local block (thesis eq. 6.5),

    un = cx2*(u[i-1]+u[i+1]) + cy2*(u[j-1]+u[j+1]) + cz2*(u[k-1]+u[k+1]) + center*u - uo

with ``cx2 = (c·dt/dx)²`` … and ``center = 2·(1 − cx2 − cy2 − cz2)``, left to right in this
order and without fused multiply-adds. All three kernels therefore give bit-for-bit the
same numbers, for any decomposition.

:data:`UPDATES` is the registry of kernels (name → class) and :data:`KERNELS` its names,
from which the solver, the CLI and the speedup experiments take their choices. numba and
the C compiler are only touched when their kernel is made. The whole-step numba-mpi loop
is in :mod:`mpiworkbench.solvers.wave.whole_step`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

Box = Sequence[tuple[int, int]]

_CSRC = Path(__file__).with_name("wave_update.c")
#: No FMA contraction: keeps the C kernel bit-identical to NumPy and numba.
C_EXTRA_FLAGS = ("-ffp-contract=off",)


class NumpyUpdate:
    """The thesis's ``update_inner`` as NumPy slicing, on flat slabs of whole planes.

    A C-ordered block is one flat array, so the six neighbours of every point of a run
    of planes are the same run shifted by ``±1``, ``±ny`` and ``±ny·nz``: each ufunc call
    then works on contiguous memory (the fast path) instead of a strided 3-D view, and a
    slab of a few planes keeps the two temporaries in cache. Points of the slab outside
    the box (ghost rows and columns) are computed too but only the box is written to
    ``un``. The arithmetic per point is unchanged, so the bits are too.
    """

    name = "numpy"

    def __init__(self, local_shape: Sequence[int], coeffs: Sequence[float], slab_bytes: int = 1 << 19):
        self.coeffs = tuple(float(c) for c in coeffs)
        self.local_shape = tuple(int(n) for n in local_shape)
        plane = self.local_shape[1] * self.local_shape[2]
        self.slab = max(1, slab_bytes // (plane * 8))
        self._t1 = np.empty(self.slab * plane)
        self._t2 = np.empty_like(self._t1)

    def __call__(self, un: np.ndarray, u: np.ndarray, uo: np.ndarray, box: Box) -> None:
        (i0, i1), (j0, j1), (k0, k1) = box
        if i1 <= i0 or j1 <= j0 or k1 <= k0:
            return
        _, ny, nz = u.shape
        if 2 * (j1 - j0) * (k1 - k0) < ny * nz:
            # a thin box (a shell face of the overlapped update): whole planes would waste work
            self._strided(un, u, uo, box)
            return
        cx2, cy2, cz2, center = self.coeffs
        sx, sy = ny * nz, nz  # flat strides of the x and y neighbours
        uf, of = u.reshape(-1), uo.reshape(-1)  # views: the arrays are C-contiguous
        for a in range(i0, i1, self.slab):
            b = min(a + self.slab, i1)
            s, e = a * sx, b * sx
            t1, t2 = self._t1[: e - s], self._t2[: e - s]
            np.add(uf[s - sx : e - sx], uf[s + sx : e + sx], out=t1)
            t1 *= cx2
            np.add(uf[s - sy : e - sy], uf[s + sy : e + sy], out=t2)
            t2 *= cy2
            t1 += t2
            np.add(uf[s - 1 : e - 1], uf[s + 1 : e + 1], out=t2)
            t2 *= cz2
            t1 += t2
            np.multiply(uf[s:e], center, out=t2)
            t1 += t2
            np.subtract(t1, of[s:e], out=t1)
            un[a:b, j0:j1, k0:k1] = t1.reshape(b - a, ny, nz)[:, j0:j1, k0:k1]

    def _strided(self, un: np.ndarray, u: np.ndarray, uo: np.ndarray, box: Box) -> None:
        """The same expression on 3-D views of the box (fine for thin boxes)."""
        (i0, i1), (j0, j1), (k0, k1) = box
        cx2, cy2, cz2, center = self.coeffs
        I, J, K = slice(i0, i1), slice(j0, j1), slice(k0, k1)
        t = cx2 * (u[i0 - 1 : i1 - 1, J, K] + u[i0 + 1 : i1 + 1, J, K])
        t = t + cy2 * (u[I, j0 - 1 : j1 - 1, K] + u[I, j0 + 1 : j1 + 1, K])
        t = t + cz2 * (u[I, J, k0 - 1 : k1 - 1] + u[I, J, k0 + 1 : k1 + 1])
        t = t + center * u[I, J, K]
        np.subtract(t, uo[I, J, K], out=un[I, J, K])


#: JIT functions compiled so far in this process.
_numba_funcs: dict[str, object] = {}


def numba_update_func():
    """The ``@njit`` box update (compiled once per process, cached on disk)."""
    if "update" not in _numba_funcs:
        import numba

        @numba.njit(cache=True, nogil=True)
        def update(un, u, uo, i0, i1, j0, j1, k0, k1, cx2, cy2, cz2, center):  # pragma: no cover - JIT
            # 1-D row views indexed from 0: numba then needs no negative-index wrap-around
            # check in the inner loop, and LLVM vectorises it (3-D u[i, j, k-1] does not).
            m = k1 - k0
            for i in range(i0, i1):
                for j in range(j0, j1):
                    c = u[i, j, k0:k1]
                    zm = u[i, j, k0 - 1 : k1 - 1]
                    zp = u[i, j, k0 + 1 : k1 + 1]
                    xm = u[i - 1, j, k0:k1]
                    xp = u[i + 1, j, k0:k1]
                    ym = u[i, j - 1, k0:k1]
                    yp = u[i, j + 1, k0:k1]
                    o = uo[i, j, k0:k1]
                    n = un[i, j, k0:k1]
                    for k in range(m):
                        t = cx2 * (xm[k] + xp[k])
                        t = t + cy2 * (ym[k] + yp[k])
                        t = t + cz2 * (zm[k] + zp[k])
                        t = t + center * c[k]
                        n[k] = t - o[k]

        _numba_funcs["update"] = update
    return _numba_funcs["update"]


class NumbaUpdate:
    """Triple loop compiled by numba (no fastmath: no reassociation, no FMA)."""

    name = "numba"

    def __init__(self, local_shape: Sequence[int], coeffs: Sequence[float]):
        self.coeffs = tuple(float(c) for c in coeffs)
        self._func = numba_update_func()

    def __call__(self, un, u, uo, box: Box) -> None:
        (i0, i1), (j0, j1), (k0, k1) = box
        self._func(un, u, uo, i0, i1, j0, j1, k0, k1, *self.coeffs)


class CUpdate:
    """``wave_update.c`` built with the venv's ``mpicc`` through :mod:`mpiworkbench.core.cbuild`."""

    name = "c"

    def __init__(self, local_shape: Sequence[int], coeffs: Sequence[float]):
        import ctypes

        from mpiworkbench.core import cbuild  # lazy: cbuild imports subprocess, hashlib and tempfile, which only a build needs
        lib = cbuild.load("wave_update", [_CSRC], mpi=False, extra_flags=C_EXTRA_FLAGS)
        func = lib.wave_update
        dbl_p = ctypes.POINTER(ctypes.c_double)
        func.argtypes = [dbl_p, dbl_p, dbl_p] + [ctypes.c_int] * 9 + [ctypes.c_double] * 4
        func.restype = None
        self._func = func
        self._dbl_p = dbl_p
        self.coeffs = tuple(float(c) for c in coeffs)
        self.local_shape = tuple(int(n) for n in local_shape)

    def _ptr(self, a: np.ndarray):
        if a.shape != self.local_shape or a.dtype != np.float64 or not a.flags.c_contiguous:
            raise ValueError(f"C kernel needs C-contiguous float64 arrays of shape {self.local_shape}; got {a.dtype} {a.shape}")
        return a.ctypes.data_as(self._dbl_p)

    def __call__(self, un, u, uo, box: Box) -> None:
        (i0, i1), (j0, j1), (k0, k1) = box
        self._func(self._ptr(un), self._ptr(u), self._ptr(uo), *self.local_shape, i0, i1, j0, j1, k0, k1, *self.coeffs)


#: The registry of update kernels, fastest-to-build first: name → class.
UPDATES = {cls.name: cls for cls in (NumpyUpdate, NumbaUpdate, CUpdate)}
#: Kernel names (the keys of :data:`UPDATES`).
KERNELS = tuple(UPDATES)


def make_update(kernel: str, local_shape: Sequence[int], coeffs: Sequence[float]):
    """The update kernel *kernel* (one of :data:`KERNELS`) for ghosted blocks of *local_shape*."""
    if kernel not in UPDATES:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}; got {kernel!r}")
    return UPDATES[kernel](local_shape, coeffs)


def interior_box(local_shape: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """All owned points of a ghosted block."""
    return tuple((1, n - 1) for n in local_shape)


def core_and_shell(local_shape: Sequence[int]) -> tuple[tuple[tuple[int, int], ...], list]:
    """Split the owned points into the inner core (needs no ghosts) and the shell boxes.

    The core ``[2:-2]³`` can be updated while the halo exchange is in flight; the shell
    (the outermost owned layer, as disjoint boxes) after it completes.
    """
    n = [int(s) - 2 for s in local_shape]  # owned points per axis; owned indices 1..n
    core = tuple((2, m) for m in n)  # [2, n) i.e. owned indices 2..n-1
    shell = []
    lo = [1, 1, 1]
    hi = [m + 1 for m in n]
    for axis in range(3):
        for plane in ((lo[axis], min(lo[axis] + 1, hi[axis])), (max(hi[axis] - 1, lo[axis] + 1), hi[axis])):
            if plane[1] <= plane[0]:
                continue
            box = [(lo[a], hi[a]) for a in range(3)]
            box[axis] = plane
            shell.append(tuple(box))
        lo[axis] += 1
        hi[axis] -= 1
    return core, shell
