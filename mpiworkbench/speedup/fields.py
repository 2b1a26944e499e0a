"""A digest of a gathered field: two runs computed the same numbers exactly when it matches."""

from __future__ import annotations

import hashlib

import numpy as np


def field_digest(field: np.ndarray | None) -> str | None:
    """The first 16 hex digits of the SHA-256 of *field*'s float64 bytes (``None`` → ``None``).

    Equal digests mean bit-for-bit equal fields (same shape and values); the speedup
    records carry it so a test or a reader can check every backend computed the same field.
    """
    if field is None:
        return None
    data = np.ascontiguousarray(field, dtype=np.float64)
    h = hashlib.sha256(repr(data.shape).encode())
    h.update(data.tobytes())
    return h.hexdigest()[:16]
