"""A kernel killed with SIGKILL runs no atexit: the watchdog must still stop its cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from mpiworkbench.core.processes import alive, descendants
SCRIPT = """
import json, sys
from mpiworkbench import Workbench
wb = Workbench(n=2).start()
print(json.dumps({"controller": wb.cluster.controller.process.pid,
                  "engines": [s.process.pid for s in wb.cluster.engines.values()],
                  "watchdog": wb._connection.watchdog.pid}), flush=True)
sys.stdin.read()  # wait to be killed
"""


def _wait(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # polling a condition (processes gone), not a fixed wait
    return True


def test_cluster_dies_with_a_killed_parent():
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(proc.stdout.readline())
        cluster = [pids["controller"], *pids["engines"]]
        everything = cluster + [p for root in cluster for p in descendants(root)]
        assert all(alive(p) for p in cluster)
        os.kill(proc.pid, signal.SIGKILL)  # no atexit, no finally: only the watchdog is left
        proc.wait(timeout=30)
        assert _wait(lambda: not any(alive(p) for p in everything), timeout=60), [p for p in everything if alive(p)]
        assert _wait(lambda: not alive(pids["watchdog"]), timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
