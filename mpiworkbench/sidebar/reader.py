"""The reader a lab part runs for the worlds of this environment: ``python -m mpiworkbench.sidebar.reader``.

The lab part (:mod:`mpiworkbench.lab.server`, maybe in a centre's JupyterLab with no workbench)
cannot read a world's files itself: their format is this kernel side's. So it starts this
module with the Python a world's record names (:func:`mpiworkbench.lab.protocol.reader_record`),
keeps it running, and sends it one line of JSON per look of the sidebar:

``{"protocol": 1, "worlds": [[profile_dir, cluster_id, directory], ...], "kernel_files": {kernel
id: connection file}, "lab_kernels": [kernel id, ...]}``

and reads one line back: ``{"protocol": 1, "worlds": [...]}`` (each as
:func:`mpiworkbench.sidebar.worlds.read_world` reads it), or ``{"protocol": 1, "error": "..."}``.
It ends when the lab closes its input (the lab server stopped, or killed: its end of the pipe
closes with it), so it never outlives the lab.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

from mpiworkbench.lab.protocol import PROTOCOL
from mpiworkbench.sidebar.worlds import rank_kernels, read_world


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (see the module's docstring)."""
    if request.get("protocol") != PROTOCOL:
        return {"protocol": PROTOCOL, "error": f"this reader speaks protocol {PROTOCOL}, the lab {request.get('protocol')}"}
    kernels = rank_kernels(request.get("kernel_files") or {})
    lab_kernels = set(request.get("lab_kernels") or ())
    worlds = [read_world(Path(profile_dir), cluster_id, Path(directory), kernels, lab_kernels=lab_kernels)
              for profile_dir, cluster_id, directory in request.get("worlds") or ()]
    return {"protocol": PROTOCOL, "worlds": worlds}


def serve(requests: IO[str], answers: IO[str]) -> None:
    """Answer every line of *requests* on *answers*, until *requests* ends."""
    for line in requests:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception as exc:  # one bad look must not end the reader: the next one may be fine
            reply = {"protocol": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        answers.write(json.dumps(reply) + "\n")
        answers.flush()


if __name__ == "__main__":
    answers, sys.stdout = sys.stdout, sys.stderr  # whatever else prints must not break a line of the protocol
    serve(sys.stdin, answers)
