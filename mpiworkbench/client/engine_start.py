"""What each engine of a workbench's own cluster runs: ipyparallel's ``ipengine``, with its
nanny started at once instead of in the middle of the engine's registration.

Every ipyparallel engine starts a *nanny* (a second Python process that relays signals to it,
which the workbench needs to kill a rank blocked in MPI). ipyparallel starts it only once the
controller has accepted the engine, and waits for it: the nanny's imports (about 1 s of CPU,
2-3 s on a loaded machine) sat on the critical path of every start. Here the nanny process
is spawned before the engine imports anything, so its imports overlap the engine's own and
the controller's start; ipyparallel's ``start_nanny`` then hands the already-running process
its arguments. The nanny skips the ``ipyparallel`` package's ``__init__`` (launchers, client,
entry points: a fifth of its imports), which it never uses (:data:`NANNY_CODE`). And the engine
imports NumPy before it waits for the controller: ipyparallel's serializer imports it at the
engine's first reply anyway (the rank map), which was on the critical path too.

The engines start together with the controller (:func:`mpiworkbench.client.clusters.new_cluster`)
and read its connection file, which the controller writes in place: an engine could read it
half-written. :func:`wait_for_connection_file` waits until it parses.

Should the prestarted nanny fail, ipyparallel's own is started instead. Nothing else of the
engine changes.

This file is run by path (:data:`ENGINE_CMD`), never imported by the engines as part of
:mod:`mpiworkbench.client`: importing that package costs about 1 s, which every rank would pay.
It imports nothing of :mod:`mpiworkbench`.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

#: The command an engine set runs (ipyparallel's ``EngineLauncher.engine_cmd``; ipyparallel
#: appends ``--mpi`` and the cluster's arguments). ``runpy.run_path`` runs this file without
#: putting its directory on ``sys.path`` (where ``trace.py`` or ``profile.py`` would shadow
#: the standard library's).
ENGINE_CMD = [sys.executable, "-c", f"import runpy; runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')"]


#: What the prestarted nanny runs: ``python -m ipyparallel.engine.nanny``, with the package
#: ``ipyparallel`` entered as a bare namespace (its submodules import as usual; its
#: ``__init__``, which imports the launchers, the client and their entry points, does not run).
NANNY_CODE = (
    "import importlib.util, runpy, sys, types\n"
    "spec = importlib.util.find_spec('ipyparallel')\n"
    "package = types.ModuleType('ipyparallel')\n"
    "package.__spec__, package.__file__ = spec, spec.origin\n"
    "package.__path__ = list(spec.submodule_search_locations)\n"
    "sys.modules['ipyparallel'] = package\n"
    "runpy.run_module('ipyparallel.engine.nanny', run_name='__main__', alter_sys=True)\n"
)


def spawn_nanny() -> subprocess.Popen:
    """ipyparallel's nanny process, started now: it imports, then waits for its arguments on
    stdin (:func:`handing_over`). Spawned as ipyparallel spawns it (a session of its own, so a
    signal to the engine's process group does not reach it; unbuffered output)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-c", NANNY_CODE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, start_new_session=True)


def handing_over(nanny: subprocess.Popen, original: Callable[..., Any]) -> Callable[..., Any]:
    """A replacement for ``ipyparallel.engine.nanny.start_nanny`` that gives *nanny* the
    arguments ipyparallel would have started a new one with, and returns what that returns
    (the nanny's URL and its process). Falls back to *original* (ipyparallel's own nanny)
    when *nanny* has died or fails to answer."""
    used = False

    def start_nanny(**kwargs: Any):
        nonlocal used
        if used or nanny.poll() is not None:
            return original(**kwargs)
        used = True
        try:
            nanny.stdin.write(pickle.dumps({**kwargs, "pid": os.getpid()}))  # it watches us, its parent
            nanny.stdin.close()
            url = nanny.stdout.readline().decode("utf8").strip()
        except OSError:  # it died meanwhile
            url = ""
        if not url:
            nanny.kill()
            nanny.wait()
            return original(**kwargs)
        return url, nanny

    return start_nanny


#: The environment variable naming the controller's connection file for the engines, and how
#: long to wait for it (``PATH:SECONDS``); set by :func:`mpiworkbench.client.clusters.new_cluster`.
CONNECTION_FILE_VARIABLE = "MPIWORKBENCH_ENGINE_CONNECTION_FILE"


def wait_for_connection_file(spec: str, poll_s: float = 0.02) -> bool:
    """Wait until the file of *spec* (``PATH:SECONDS``) holds a whole JSON object, at most
    SECONDS; whether it does. (ipyparallel's engine waits only until the file exists.)"""
    path, _, seconds = spec.rpartition(":")
    deadline = time.monotonic() + float(seconds or 0)
    while True:
        try:
            if isinstance(json.loads(Path(path).read_text()), dict):
                return True
        except (OSError, ValueError):  # not there yet, or caught half-written
            pass
        if time.monotonic() > deadline:
            return False  # ipyparallel's engine then says what is missing
        time.sleep(poll_s)


def main() -> None:
    # An engine that never asks for its nanny (it failed before registering) exits and so
    # closes the nanny's stdin: the nanny then ends too.
    nanny = spawn_nanny()
    from ipyparallel.engine import app

    app.start_nanny = handing_over(nanny, app.start_nanny)
    try:
        import numpy  # noqa: F401 - see the module's docstring: needed at the first reply anyway
    except ImportError:
        pass
    if os.environ.get(CONNECTION_FILE_VARIABLE):
        wait_for_connection_file(os.environ[CONNECTION_FILE_VARIABLE])
    app.main()


if __name__ == "__main__":
    main()
