"""Message buffers shared by every backend: same allocation, alignment, huge pages, touch.

Research note §6.6/§8.2: NumPy ``madvise``s large arrays for transparent huge pages while a
naive C ``posix_memalign`` does not, which made "Python beat C" at ≥ 1 MiB. So every
backend, C included, times the *same* NumPy-allocated buffers: 2 MiB-aligned and advised
``MADV_HUGEPAGE`` when they are at least 2 MiB, 4 KiB-aligned otherwise, and touched
before any timing (first-touch page faults stay out of the timed region).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from dataclasses import dataclass

import numpy as np

HUGE_PAGE = 2 * 1024 * 1024
PAGE = 4096
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
    align = HUGE_PAGE if nbytes >= HUGE_PAGE else PAGE
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

    def describe(self) -> str:
        return (
            "NumPy uint8, touched before timing, "
            + ("2 MiB-aligned + MADV_HUGEPAGE (THP)" if self.huge_pages else "4 KiB-aligned (no THP advice)")
            + "; the same buffers for every backend"
        )
