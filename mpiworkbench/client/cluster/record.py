"""The world's directory beside its cluster's files, and the engine set recorded there: what a start,
an attach and a restart write, and what the watchdog, an attach and a restart read. The turn the
clients take lives in the same directory (:mod:`mpiworkbench.client.calls.turns`)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from mpiworkbench.lab.protocol import WORLD_PREFIX, WORLD_RECORD


def world_directory(profile_dir: str | os.PathLike, cluster_id: str) -> Path:
    """Where the world of the cluster *cluster_id* of a profile keeps its record, its turn and
    its clients (``security/mpiworkbench-world-<id>/``: the connection files are there too, so
    every client can reach it)."""
    return Path(profile_dir) / "security" / f"{WORLD_PREFIX}{cluster_id}"


def footprint_directory(profile_dir: str | os.PathLike, cluster_id: str) -> Path:
    """Where each rank of the cluster's world leaves its footprint (its files in ``/dev/shm``:
    :func:`mpiworkbench.core.shm.record_footprint`) once MPI is initialised, for the watchdog to
    remove what the rank leaves when it is killed (a launcher ending a job kills its ranks)."""
    return world_directory(profile_dir, cluster_id) / "footprints"


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in *path*, or ``None`` (gone, empty, or caught while being written)."""
    try:
        text = path.read_text()
        return json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write *data* to *path* whole or not at all (a reader never sees half of it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def recorded_engine_set(directory: str | os.PathLike) -> dict[str, Any] | None:
    """The engine set recorded in the world *directory* (:func:`world_directory`): ``ranks``
    (engine id → rank), ``generation``, ``restarted_by``, ``at``, ``thread_level``; or ``None``."""
    return read_json(Path(directory) / WORLD_RECORD)
