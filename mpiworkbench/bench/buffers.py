"""Message buffers shared by every backend: same allocation, alignment, huge pages, touch.

Research note §6.6/§8.2: NumPy ``madvise``s large arrays for transparent huge pages while a
naive C ``posix_memalign`` does not, which made "Python beat C" at ≥ 1 MiB. So every
backend, C included, times the *same* NumPy-allocated buffers, touched before any timing
(first-touch page faults stay out of the timed region).

Huge pages where NumPy gets them: NumPy advises ``MADV_HUGEPAGE`` for allocations of at
least 4 MiB (:data:`NUMPY_HUGEPAGE_THRESHOLD`, checked in ``/proc/self/smaps`` on this
machine: 3 MiB arrays get none, 4 MiB arrays get huge pages), so buffers of at least
4 MiB are 2 MiB-aligned and advised, smaller ones 4 KiB-aligned and not advised.

The buffers are allocated **per message size** (:meth:`Buffers.for_size`), like
``mpi4py.bench`` and an OSU run that stops at that size: a number measured at 1 MiB must
not depend on whether the sweep went on to 8 MiB. (An earlier version sized one buffer
for the largest message, so a 1 MiB message in an 8 MiB sweep sat on huge pages and ran
faster than the same message in ``mpi4py.bench`` or a bare C loop; measured:
docs/measurements.md, Micro-benchmarks.)
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from dataclasses import dataclass

import numpy as np

HUGE_PAGE = 2 * 1024 * 1024
PAGE = 4096
#: NumPy (``_npy_alloc_cache``/``default_malloc``) advises huge pages from this many bytes on.
NUMPY_HUGEPAGE_THRESHOLD = 4 * 1024 * 1024
_MADV_HUGEPAGE = 14


def _madvise_hugepage(array: np.ndarray) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.madvise(ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(array.nbytes),
                            _MADV_HUGEPAGE) == 0
    except OSError:
        return False


def aligned_bytes(nbytes: int) -> tuple[np.ndarray, bool]:
    """A touched uint8 array of *nbytes*, aligned as described above; (array, huge pages advised)."""
    align = HUGE_PAGE if nbytes >= NUMPY_HUGEPAGE_THRESHOLD else PAGE
    raw = np.empty(nbytes + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    array = raw[offset:offset + nbytes]
    huge = _madvise_hugepage(array) if align == HUGE_PAGE else False
    array.fill(ord("a"))  # touch every page before timing (OSU fills with 'a'/'b' too)
    return array, huge


@dataclass
class Buffers:
    """Send and receive buffers big enough for *max_size* bytes to every rank.

    ``send``/``recv`` are uint8; ``send_f64``/``recv_f64`` are float64 views of the same
    memory for the reductions.
    """

    send: np.ndarray
    recv: np.ndarray
    max_size: int
    huge_pages: bool

    @classmethod
    def for_size(cls, size: int, blocks: int = 1) -> "Buffers":
        """Buffers for messages of *size* bytes, *blocks* of them (one per rank for
        alltoall/gather/scatter/allgather, else 1): what a sweep uses at that size."""
        return cls.allocate(size, blocks)

    @classmethod
    def allocate(cls, max_size: int, nprocs: int) -> "Buffers":
        nbytes = max(8, int(max_size)) * max(1, int(nprocs))
        nbytes += (-nbytes) % 8
        send, huge_s = aligned_bytes(nbytes)
        recv, huge_r = aligned_bytes(nbytes)
        recv.fill(ord("b"))
        return cls(send, recv, int(max_size), huge_s and huge_r)

    @property
    def send_f64(self) -> np.ndarray:
        return self.send.view(np.float64)

    @property
    def recv_f64(self) -> np.ndarray:
        return self.recv.view(np.float64)

    @classmethod
    def describe(cls) -> str:
        return (
            "NumPy uint8, touched before timing, "
            + "allocated per message size (size bytes; size x np for alltoall/gather/scatter/allgather); 2 MiB-aligned + MADV_HUGEPAGE from "
            + f"{NUMPY_HUGEPAGE_THRESHOLD >> 20} MiB (as NumPy advises), 4 KiB-aligned below"
            + "; the same buffers for every backend at a size"
        )
