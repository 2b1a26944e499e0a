"""What a world and a lab say to each other, whatever environments they run in: the lab part's
interface, versioned.

A world's kernel side (``mpiworkbench`` in the kernel's environment) and the lab part (the MPI
world sidebar in the lab server's environment, perhaps a centre's JupyterLab that has no MPI and
no workbench) meet in files:

* **the world's directory** (``<profile>/security/mpiworkbench-world-<cluster id>/``, under the
  IPython directory): its ``world.json`` carries a :data:`READER_KEY` record, written by every
  client that records the world's engine set (:func:`reader_record`): the protocol it speaks, and
  the Python and module that read that world's files. The lab part runs that reader — the kernel
  side's own code, so the lab never parses files of another version — and talks to it in lines of
  JSON (:mod:`mpiworkbench.sidebar.reader`);
* **the lab's marker** (``mpiworkbench-lab-<pid>.json`` in Jupyter's runtime directory), written by
  the lab part while its server runs: how a kernel knows that the sidebar is there
  (:func:`live_labs`), and which Python serves it.

:data:`PROTOCOL` changes whenever either side's messages change; :func:`mismatch` says, in the
sidebar, which side to upgrade. Standard library only: this module ships in the lab part's own
wheel (``mpiworkbench-lab``) as it is.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

#: The protocol's version: the reader's request and answer, the world record, the lab's marker.
PROTOCOL = 1
#: What a world's directory is called in a profile's ``security/`` directory.
WORLD_PREFIX = "mpiworkbench-world-"
#: The world's record of its engine set, and the key of its reader record in it.
WORLD_RECORD = "world.json"
READER_KEY = "reader"
#: The lab part's marker in Jupyter's runtime directory (``<prefix><pid>.json``).
MARKER_PREFIX = "mpiworkbench-lab-"
#: The kernel side's command that adds the lab part to a lab's environment.
INSTALL_COMMAND = "{python} -m mpiworkbench lab-part install --python {lab_python}"


def reader_record(version: str, module: str = "mpiworkbench.sidebar.reader") -> dict[str, Any]:
    """What a client writes into its world's record: the protocol it speaks, and the Python and
    module (``python -m module``) that read its world's files for a lab."""
    return {"protocol": PROTOCOL, "python": sys.executable, "module": module, "version": version}


def world_directories(ipython_dir: str | os.PathLike) -> list[tuple[Path, str, Path]]:
    """``(profile_dir, cluster_id, world_directory)`` of every world under *ipython_dir*."""
    found = []
    for directory in sorted(Path(ipython_dir).glob(f"profile_*/security/{WORLD_PREFIX}*")):
        if directory.is_dir():
            found.append((directory.parents[1], directory.name[len(WORLD_PREFIX):], directory))
    return found


def read_reader(directory: Path) -> dict[str, Any] | None:
    """The reader record of the world in *directory*, or ``None`` (none yet, or a kernel side
    older than the protocol)."""
    try:
        record = json.loads((directory / WORLD_RECORD).read_text())
    except (OSError, ValueError):
        return None
    reader = record.get(READER_KEY) if isinstance(record, dict) else None
    return reader if isinstance(reader, dict) and reader.get("python") and reader.get("module") else None


def mismatch(reader: dict[str, Any] | None) -> str:
    """Why this lab part cannot read a world whose reader record is *reader* (``""``: it can),
    naming the side to upgrade."""
    if reader is None:
        return ("its workbench records no reader for the lab (a kernel side older than this sidebar): upgrade "
                "mpiworkbench in the kernel's environment")
    theirs = reader.get("protocol")
    if theirs == PROTOCOL:
        return ""
    if isinstance(theirs, int) and theirs > PROTOCOL:
        return (f"its workbench ({reader.get('version', '?')}, protocol {theirs}) is newer than this sidebar "
                f"(protocol {PROTOCOL}): upgrade the lab part in the lab's environment: "
                + INSTALL_COMMAND.format(python=reader.get("python"), lab_python=sys.executable))
    return (f"its workbench ({reader.get('version', '?')}, protocol {theirs}) is older than this sidebar "
            f"(protocol {PROTOCOL}): upgrade mpiworkbench in {reader.get('python')}'s environment")


def marker_path(runtime_dir: str | os.PathLike, pid: int) -> Path:
    return Path(runtime_dir) / f"{MARKER_PREFIX}{pid}.json"


def write_marker(runtime_dir: str | os.PathLike, facts: dict[str, Any]) -> Path:
    """Say, in *runtime_dir*, that this process serves the lab part (with *facts*: whether the lab
    lists external kernels, and where it looks for them); returns the marker's path."""
    path = marker_path(runtime_dir, os.getpid())
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.part")
    part.write_text(json.dumps({"pid": os.getpid(), "protocol": PROTOCOL, "python": sys.executable, **facts}))
    os.replace(part, path)
    return path


def live_labs(runtime_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The markers in *runtime_dir* of lab servers that still run (a killed server's marker stays
    behind: its pid is checked)."""
    labs = []
    for path in sorted(Path(runtime_dir).glob(f"{MARKER_PREFIX}*.json")):
        try:
            facts = json.loads(path.read_text())
            os.kill(int(facts["pid"]), 0)
        except PermissionError:
            pass  # another user's server: alive, not ours to read further
        except (OSError, ValueError, KeyError, TypeError):
            continue
        labs.append(facts)
    return labs
