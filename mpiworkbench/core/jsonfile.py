"""JSON files written the one way every command and results document writes them.

NumPy values become lists and numbers; NaN becomes ``null`` and ±inf the strings
``"inf"``/``"-inf"`` (JSON has neither); a file is replaced atomically, so a reader
never sees half a document while a sweep rewrites it after every size.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


def jsonable(value: Any) -> Any:
    """*value* with NumPy arrays/scalars, tuples and non-finite floats made JSON-safe."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def write_json(path: str | Path | None, payload: Any) -> None:
    """Write *payload* as indented JSON to *path* (``-`` for stdout); no-op for ``None``."""
    if path is None:
        return
    text = json.dumps(jsonable(payload), indent=2)
    if str(path) == "-":
        sys.stdout.write(text + "\n")
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n")
    tmp.replace(path)
